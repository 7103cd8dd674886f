package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardjob/shardjob/internal/testing/testlog"
	"go.yaml.in/yaml/v3"
)

// manifest is the part of a Kubernetes object the test reads.
type manifest struct {
	Kind string            `yaml:"kind"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `yaml:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Args           []string `yaml:"args"`
					ReadinessProbe struct {
						HTTPGet struct {
							Path string `yaml:"path"`
						} `yaml:"httpGet"`
					} `yaml:"readinessProbe"`
					LivenessProbe struct {
						HTTPGet struct {
							Path string `yaml:"path"`
						} `yaml:"httpGet"`
					} `yaml:"livenessProbe"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The example Deployment runs as written: its container's arguments are
// shardjob run's, its ConfigMap's jobs load, the instance it starts gets
// ready on the probe the manifest names, and the grace period outlasts
// the shutdown timeout.
func TestKubernetesExampleRuns(t *testing.T) {
	raw, err := os.ReadFile("../../example/kubernetes/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var jobs string
	var deploy *manifest
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		switch m.Kind {
		case "ConfigMap":
			jobs = m.Data["jobs.yaml"]
		case "Deployment":
			deploy = &m
		}
	}
	if jobs == "" || deploy == nil || len(deploy.Spec.Template.Spec.Containers) != 1 {
		t.Fatal("app.yaml has no ConfigMap with jobs.yaml, or no Deployment of one container")
	}
	pod := deploy.Spec.Template.Spec
	c := pod.Containers[0]
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/livez" {
		t.Errorf("probes %q and %q, want /readyz and /livez", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}

	// The jobs on this test's ZooKeeper instead of the cluster's etcd.
	dir := t.TempDir()
	jobs = strings.Replace(jobs, "etcd: [etcd:2379]", "servers: ["+strings.Join(zc.Servers(), ",")+"]", 1)
	jobs = strings.Replace(jobs, "namespace: shop", "namespace: "+newNamespace(), 1)
	jobsPath := filepath.Join(dir, "jobs.yaml")
	if err := os.WriteFile(jobsPath, []byte(jobs), 0o600); err != nil {
		t.Fatal(err)
	}
	var args []string
	var shutdown time.Duration
	for _, a := range c.Args {
		switch {
		case a == "/etc/shardjob/jobs.yaml":
			a = jobsPath
		case strings.HasPrefix(a, "--health="):
			a = "--health=127.0.0.1:0"
		case strings.HasPrefix(a, "--state-dir="):
			a = "--state-dir=" + filepath.Join(dir, "state")
		case strings.HasPrefix(a, "--shutdown-timeout="):
			if shutdown, err = time.ParseDuration(strings.TrimPrefix(a, "--shutdown-timeout=")); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, strings.ReplaceAll(a, "$(POD_NAME)", "shardjob-app-7d9f-x2x4q"))
	}
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("the container's args %q do not start with run", c.Args)
	}
	if grace := time.Duration(pod.TerminationGracePeriodSeconds) * time.Second; shutdown == 0 || grace <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %v must outlast --shutdown-timeout %v", grace, shutdown)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testlog.Buffer
	done := make(chan int, 1)
	go func() { done <- runFileCtx(ctx, args[1:], io.Discard, &stderr) }() // owned here: ends at cancel
	deadline := time.After(time.Minute)
	for ready := false; !ready; {
		if m := probeAddr.FindStringSubmatch(stderr.String()); m != nil {
			code, _ := getStatus("http://" + m[1] + "/readyz")
			ready = code == http.StatusOK
		}
		select {
		case code := <-done:
			t.Fatalf("the Deployment's command ended with %d:\n%s", code, stderr.String())
		case <-deadline:
			t.Fatalf("not ready within a minute:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d after the signal:\n%s", code, stderr.String())
	}
}
