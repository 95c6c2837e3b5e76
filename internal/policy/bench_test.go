package policy

import "testing"

// BenchmarkLoadPack parses, validates and compiles each shipped pack from
// its bytes, as at session start. Target: < 5 ms per pack.
func BenchmarkLoadPack(b *testing.B) {
	for _, name := range Packs() {
		data, _ := PackBytes(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(name+".toml", data, Options{GOOS: "linux"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluate is the policy check on a typical run_command view
// (a pipeline with a redirection) against the SOC 2 pack, plus gate
// collection. The view is computed once, as in the pipeline. No target is
// set for it; the check runs on every step, before the guard, so it is kept
// in single-digit microseconds and allocation-free on an allow.
func BenchmarkEvaluate(b *testing.B) {
	e := newEnv(b, "linux")
	p, err := Load("soc2-audit", Options{GOOS: "linux"})
	if err != nil {
		b.Fatal(err)
	}
	v := e.rc("grep -rn 'ssl_protocols' /etc/nginx 2>/dev/null | sort | uniq -c > report.txt; ls -la /var/log")
	b.ReportAllocs()
	for b.Loop() {
		pv := p.Evaluate(v)
		if pv.Decision != "allow" {
			b.Fatalf("verdict %+v", pv)
		}
		p.TriggeredGates(v, pv)
	}
}
