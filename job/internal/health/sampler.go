package health

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ProcSampler samples the machine's load from /proc/stat and
// /proc/meminfo: the idle CPU share since its previous sample (since boot
// at the first), and the share of memory available. The zero value is
// ready; it is safe for concurrent use.
type ProcSampler struct {
	mu              sync.Mutex
	lastIdle, lastT uint64
}

// Sample reads the load now.
func (p *ProcSampler) Sample() (Sample, error) {
	idle, total, err := readCPU()
	if err != nil {
		return Sample{}, err
	}
	mem, err := readMemAvailable()
	if err != nil {
		return Sample{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	share := 1.0
	if p.lastT != 0 && total > p.lastT {
		share = float64(idle-p.lastIdle) / float64(total-p.lastT)
	} else if total > 0 {
		share = float64(idle) / float64(total)
	}
	p.lastIdle, p.lastT = idle, total
	return Sample{IdleCPU: share, FreeMemory: mem}, nil
}

// readCPU returns the idle and total jiffies of /proc/stat's cpu line.
func readCPU() (idle, total uint64, err error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		for i, v := range fields[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %w", err)
			}
			total += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		return idle, total, nil
	}
	return 0, 0, errors.New("/proc/stat: no cpu line")
}

// readMemAvailable returns MemAvailable/MemTotal from /proc/meminfo.
func readMemAvailable() (float64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	var total, avail float64
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "MemTotal:":
			total = v
		case "MemAvailable:":
			avail = v
		}
	}
	if total <= 0 {
		return 0, errors.New("/proc/meminfo: no MemTotal")
	}
	return avail / total, nil
}
