package dispatch_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/shardjob/shardjob/dispatch"
)

// A receiver checks each notice's signature and timestamp, and refuses a
// notice it accepted before.
func ExampleReplayGuard() {
	secret := "whsec-0123456789abcdef"
	body := []byte(`{"event":"start","task":{"uuid":"u1"}}`)
	header := dispatch.Sign(secret, time.Now().Unix(), body) // what the dispatcher sends

	guard, err := dispatch.NewReplayGuard(5*time.Minute, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first:", guard.Verify(secret, header, body))
	err = guard.Verify(secret, header, body)
	fmt.Println("again, replayed:", errors.Is(err, dispatch.ErrSignatureReplayed))
	err = guard.Verify(secret, header, []byte(`{"event":"start","task":{"uuid":"u2"}}`))
	fmt.Println("tampered, mismatch:", errors.Is(err, dispatch.ErrSignatureMismatch))
	old := dispatch.Sign(secret, time.Now().Add(-time.Hour).Unix(), body)
	err = dispatch.Verify(secret, old, body, 5*time.Minute)
	fmt.Println("an hour old, expired:", errors.Is(err, dispatch.ErrSignatureExpired))
	// Output:
	// first: <nil>
	// again, replayed: true
	// tampered, mismatch: true
	// an hour old, expired: true
}
