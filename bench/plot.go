package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// plot draws, for each job count of the peers benchmark, three PNG files
// into dir: the fire latency distribution per system (before the kill),
// the runs per node (before the kill), and the share of jobs run at each
// tick around the kill.
func (b *bench) plot(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	byJobs := map[int][]*peerResult{}
	for _, r := range b.peers {
		byJobs[r.jobs] = append(byJobs[r.jobs], r)
	}
	kinds := []struct {
		name string
		draw func(int, []*peerResult) (*plot.Plot, error)
	}{{"latency", latencyPlot}, {"nodes", perNodePlot}, {"recovery", recoveryPlot}}
	for _, jobs := range slices.Sorted(maps.Keys(byJobs)) {
		for _, k := range kinds {
			p, err := k.draw(jobs, byJobs[jobs])
			if err != nil {
				return fmt.Errorf("%s plot: %w", k.name, err)
			}
			file := filepath.Join(dir, fmt.Sprintf("peers-%s-j%d.png", k.name, jobs))
			if err := p.Save(9*vg.Inch, 4.5*vg.Inch, file); err != nil {
				return err
			}
			fmt.Println("bench plot file=" + file)
		}
	}
	return nil
}

// latencyPlot is the cumulative distribution of fire latency (tick →
// run start) before the kill, one line per system, on a log scale.
func latencyPlot(jobs int, rs []*peerResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Fire latency before the kill, %d jobs every second, 3 nodes (cumulative)", jobs)
	p.X.Label.Text = "tick boundary → run start (ms, log scale)"
	p.Y.Label.Text = "share of runs"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	for i, r := range rs {
		lat := slices.Clone(r.phases[0].lat)
		slices.Sort(lat)
		var xys plotter.XYs
		for k, v := range lat {
			xys = append(xys, plotter.XY{X: max(v, 0.01), Y: float64(k+1) / float64(len(lat))})
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(r.system, l)
	}
	return p, nil
}

// perNodePlot is the runs per node before the kill, a group of bars per
// system.
func perNodePlot(jobs int, rs []*peerResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Runs per node before the kill, %d jobs every second", jobs)
	p.Y.Label.Text = "runs"
	w := vg.Points(14)
	var names []string
	for _, r := range rs {
		names = append(names, r.system)
	}
	for node := range 3 {
		var vs plotter.Values
		for _, r := range rs {
			vs = append(vs, float64(r.phases[0].perNode[node]))
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(node)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(node-1)
		p.Add(bars)
		p.Legend.Add(fmt.Sprintf("n%d", node), bars)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	return p, nil
}

// recoveryPlot is the runs started in each second around the kill (x = 0),
// as a share of the jobs, one line per system: 1 is every job once a
// second, 0 nothing ran, above 1 make-up runs or duplicates.
func recoveryPlot(jobs int, rs []*peerResult) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Recovery: runs started per second / %d jobs; the busiest node killed 50 ms after second 0", jobs)
	p.X.Label.Text = "second, from the tick the kill came after"
	p.Y.Label.Text = "runs started / jobs"
	p.Y.Min = 0
	p.Legend.Top = false
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for i, r := range rs {
		xys := make(plotter.XYs, len(r.seriesX))
		for k := range r.seriesX {
			xys[k] = plotter.XY{X: r.seriesX[k], Y: r.seriesY[k]}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color = plotutil.Color(i)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(r.system, l, pts)
	}
	return p, nil
}
