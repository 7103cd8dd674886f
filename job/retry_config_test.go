package job

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func retryConfig(p RetryPolicy) Config {
	return Config{Name: "retrying", Cron: "0 * * * * *", ShardingTotalCount: 2, Retry: p}
}

func TestRetryConfigRoundTrips(t *testing.T) {
	for _, p := range []RetryPolicy{
		{},
		{Attempts: 3},
		{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second, Jitter: 0.2},
		{Attempts: MaxRetryAttempts, Backoff: MaxRetryBackoff, MaxBackoff: MaxRetryBackoff, Jitter: 1},
		{Attempts: 1, MaxBackoff: 100 * time.Millisecond, Jitter: 0.123456789},
	} {
		c := retryConfig(p)
		doc, err := c.Encode()
		if err != nil {
			t.Fatalf("%+v: Encode: %v", p, err)
		}
		if p == (RetryPolicy{}) && strings.Contains(string(doc), "\nretry:") {
			t.Errorf("the zero policy is written:\n%s", doc)
		}
		got, err := DecodeConfig(doc)
		if err != nil {
			t.Fatalf("%+v: DecodeConfig:\n%s\n%v", p, doc, err)
		}
		if got.Retry != p {
			t.Errorf("round trip of %+v gave %+v:\n%s", p, got.Retry, doc)
		}
		if err := c.WithDefaults().Validate(); err != nil {
			t.Errorf("%+v with defaults: %v", p, err)
		}
	}
}

func TestRetryConfigDecodesYAML(t *testing.T) {
	doc := "name: r\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nretry:\n  attempts: 3\n  backoff: 1s\n  maxBackoff: 30s\n  jitter: 0.2\n"
	c, err := DecodeConfig([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := RetryPolicy{Attempts: 3, Backoff: time.Second, MaxBackoff: 30 * time.Second, Jitter: 0.2}
	if c.Retry != want {
		t.Errorf("decoded %+v, want %+v", c.Retry, want)
	}
	_, err = DecodeConfig([]byte("name: r\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nretry:\n  attempts: 3\n  backof: 1s\n"))
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), `did you mean "backoff"`) {
		t.Errorf("a misspelt retry key: %v", err)
	}
	_, err = DecodeConfig([]byte("name: r\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nretry: 3\n"))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "mapping") {
		t.Errorf("a retry that is not a mapping: %v", err)
	}
	_, err = DecodeConfig([]byte("name: r\ncron: \"0 * * * * *\"\nshardingTotalCount: 1\nretry:\n  attempts: 2\n  jitter: fast\n"))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "jitter") {
		t.Errorf("a jitter that is not a number: %v", err)
	}
}

func TestRetryConfigRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		p    RetryPolicy
		want string
	}{
		{RetryPolicy{Attempts: -1}, "retry.attempts -1: must be between 0"},
		{RetryPolicy{Attempts: MaxRetryAttempts + 1}, "retry.attempts 101"},
		{RetryPolicy{Attempts: 1, Backoff: -time.Second}, "retry.backoff -1s"},
		{RetryPolicy{Attempts: 1, Backoff: MaxRetryBackoff + 1}, "retry.backoff"},
		{RetryPolicy{Attempts: 1, MaxBackoff: -1}, "retry.maxBackoff"},
		{RetryPolicy{Attempts: 1, Backoff: time.Minute, MaxBackoff: time.Second}, "retry.maxBackoff 1s: is shorter than retry.backoff 1m0s"},
		{RetryPolicy{Attempts: 1, Jitter: 1.5}, "retry.jitter 1.5: must be between 0 and 1"},
		{RetryPolicy{Attempts: 1, Jitter: -0.1}, "retry.jitter -0.1"},
		{RetryPolicy{Backoff: time.Second}, "without attempts"},
	} {
		err := retryConfig(c.p).Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `job "retrying"`) {
			t.Errorf("%+v: got %v, want an error saying %q", c.p, err, c.want)
		}
	}
}
