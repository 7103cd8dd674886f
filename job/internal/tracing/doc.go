// Package tracing holds the spans of a job's fires: one span per fire on an
// instance, a child span per item run (per run of consecutive items for a
// range job), each ended with its outcome. Package job turns tracing on
// (WithTracerProvider), names the spans and attributes for its users (its
// FireSpanName, ItemSpanName and Attr constants are this package's), and
// hands each fire's and run's facts here as plain values.
//
// It owns:
//
//   - the Tracer (tracing.go): a scheduler's tracer; a nil *Tracer is
//     tracing off, and every call on it then does nothing and allocates
//     nothing;
//   - a fire's span (Fire): started by Tracer.StartFire, its items'
//     spans started by StartItem and ended by EndItem or EndAttempt, and
//     the count of the items that failed or were cut short, which End
//     writes as the fire's status.
//
// The lock discipline: none; a Fire's count is atomic, shared by the
// goroutines of its items' runs. It may import the standard library and
// OpenTelemetry's API; nothing of package job. It starts no goroutine.
package tracing
