package etcdtest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	ossignal "os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// memberEnv carries a member's spec to a process started to run it: the
// test binary itself, started again (see init).
const memberEnv = "SHARDJOB_ETCDTEST_MEMBER"

// spec is everything a member needs to start.
type spec struct {
	Name           string `json:"name"`
	Dir            string `json:"dir"`
	ClientURL      string `json:"clientURL"`
	PeerURL        string `json:"peerURL"`
	InitialCluster string `json:"initialCluster"`
	ClusterState   string `json:"clusterState"` // "new" or "existing"
	Token          string `json:"token"`
	CertFile       string `json:"certFile,omitempty"`
	KeyFile        string `json:"keyFile,omitempty"`
	CAFile         string `json:"caFile,omitempty"`
	ClientCertAuth bool   `json:"clientCertAuth,omitempty"`
}

// maxTxnOps is every member's --max-txn-ops: room for the largest
// transaction a scheduler makes (etcd's default is 128).
const maxTxnOps = 1 << 14

// config renders s as an embed config. Logs go to dir/member.log.
func (s spec) config() (*embed.Config, error) {
	c := embed.NewConfig()
	c.Name = s.Name
	c.Dir = filepath.Join(s.Dir, "data")
	cu, err := url.Parse(s.ClientURL)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(s.PeerURL)
	if err != nil {
		return nil, err
	}
	c.ListenClientUrls, c.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	c.ListenPeerUrls, c.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	c.InitialCluster = s.InitialCluster
	c.InitialClusterToken = s.Token
	c.ClusterState = s.ClusterState
	c.MaxTxnOps = maxTxnOps
	// bcrypt's lowest cost: test passwords guard nothing, and the default
	// makes every login take tens of milliseconds (seconds under the race
	// detector, which instruments an in-process member too).
	c.BcryptCost = 4
	c.Logger = "zap"
	c.LogLevel = "info"
	c.LogOutputs = []string{filepath.Join(s.Dir, "member.log")}
	c.StrictReconfigCheck = false
	if s.CertFile != "" {
		c.ClientTLSInfo.CertFile = s.CertFile
		c.ClientTLSInfo.KeyFile = s.KeyFile
		c.ClientTLSInfo.TrustedCAFile = s.CAFile
		c.ClientTLSInfo.ClientCertAuth = s.ClientCertAuth
	}
	return c, nil
}

// start starts the member and waits until it has joined (at most limit).
func (s spec) start(limit time.Duration) (*embed.Etcd, error) {
	c, err := s.config()
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %s: %w", s.Name, err)
	}
	e, err := embed.StartEtcd(c)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %s: %w", s.Name, err)
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-e.Server.StopNotify():
		e.Close()
		return nil, fmt.Errorf("etcdtest: %s stopped while starting (see %s)", s.Name, filepath.Join(s.Dir, "member.log"))
	case <-t.C:
		e.Close()
		return nil, fmt.Errorf("etcdtest: %s not ready within %v (see %s)", s.Name, limit, filepath.Join(s.Dir, "member.log"))
	}
}

// init runs a member when the process was started as one: a test binary
// that imports etcdtest is started again with the member's spec in
// memberEnv, serves until SIGTERM, and exits without running any test.
func init() {
	raw := os.Getenv(memberEnv)
	if raw == "" {
		return
	}
	os.Exit(runMember(raw))
}

func runMember(raw string) int {
	var s spec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest: bad member spec:", err)
		return 2
	}
	sigs := make(chan os.Signal, 1)
	ossignal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	// Joining an existing cluster waits for a quorum, which may be
	// restarting too: no limit here; the parent bounds the wait.
	c, err := s.config()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	e, err := embed.StartEtcd(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcdtest:", err)
		return 1
	}
	select {
	case <-sigs:
	case <-e.Server.StopNotify():
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcdtest:", err)
	}
	e.Close()
	return 0
}
