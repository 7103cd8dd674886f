package health

import "testing"

func TestProcSampler(t *testing.T) {
	var p ProcSampler
	for range 2 {
		s, err := p.Sample()
		if err != nil {
			t.Fatal(err)
		}
		if s.IdleCPU < 0 || s.IdleCPU > 1 || s.FreeMemory <= 0 || s.FreeMemory > 1 {
			t.Fatalf("sample out of range: %+v", s)
		}
	}
}
