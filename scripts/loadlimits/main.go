// Command loadlimits measures the connection and idle-session limits of
// `ironvise serve` on loopback (issue 13, items 2 and 3) and prints the
// numbers. It builds ironvise from this repository, starts one `serve` on
// 127.0.0.1 with a fresh data directory and an open-file limit of 4096,
// drives it, and stops it; nothing leaves the machine.
//
// # Usage
//
//	go run ./scripts/loadlimits [-sessions 10000] [-deadline 10m]
//
// Linux only: it uses several loopback source addresses (127.0.0.0/8 all
// reach lo) as distinct peers, /proc for the server's memory and open
// descriptors, and sh's ulimit for the server's descriptor limit.
//
// # What it does
//
//  1. Idle keep-alive connections from one address: the per-address cap
//     (ECTO_MAX_CONNECTIONS_PER_IP, 512) admits that many, then 429.
//  2. Idle connections from eight more addresses: the global cap (derived
//     from the limit: 4096 minus a tenth) admits up to it, then 503 with
//     Retry-After; a new peer is refused while it is full and served again
//     once the connections close.
//  3. Slow uploads with a token (ECTO_BODY_TIMEOUT_SECS=5): every one is
//     cut, and how long the last took.
//  4. Idle API sessions (agent_loop false): the server's resident memory
//     before, after creating -sessions of them, and after they went
//     dormant (ECTO_SESSION_IDLE_SECS=5); the per-token and global caps
//     refusing one more; and how long a graceful shutdown takes.
//
// # Limitations
//
// Client and server share the machine's cores, so latencies are
// pessimistic. The run is bounded: every phase has its own limits, the
// whole run stops at -deadline, and the server is killed if it has not
// exited 60 s after SIGTERM.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	adminToken = "loadlimits-admin-token-0123456789abcdef0123456789"
	agentToken = "loadlimits-agent-token-0123456789abcdef0123456789"
	fdLimit    = 4096
)

func main() {
	sessions := flag.Int("sessions", 10000, "idle API sessions to create in phase 4")
	bin := flag.String("bin", "", "an ironvise binary to measure instead of building this repository's (to compare builds)")
	deadline := flag.Duration("deadline", 10*time.Minute, "stop everything after this long")
	flag.Parse()
	if runtime.GOOS != "linux" {
		fmt.Fprintln(os.Stderr, "loadlimits: Linux only (it uses 127.0.0.0/8 source addresses and /proc)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *deadline)
	defer cancel()
	if err := run(ctx, *bin, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "loadlimits:", err)
		os.Exit(1)
	}
}

// server is the `ironvise serve` child.
type server struct {
	cmd  *exec.Cmd
	url  string
	addr string
	pid  int
}

func run(ctx context.Context, bin string, sessions int) error {
	dir, err := os.MkdirTemp("", "ironvise-loadlimits-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "ironvise")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ironvise")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build ./cmd/ironvise (run from the repository root): %w", err)
		}
	}
	srv, err := start(ctx, bin, dir, sessions)
	if err != nil {
		return err
	}
	defer srv.kill()
	fmt.Printf("serve pid %d on %s, open-file limit %d\n\n", srv.pid, srv.url, fdLimit)

	if err := phaseConnections(ctx, srv); err != nil {
		return err
	}
	if err := phaseSlowBodies(ctx, srv); err != nil {
		return err
	}
	return phaseSessions(ctx, srv, sessions)
}

// start runs serve with a fresh data dir under an open-file limit of
// fdLimit and waits for its listening line.
func start(ctx context.Context, bin, dir string, sessions int) (*server, error) {
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf("ulimit -n %d && exec \"$0\" serve --workspace \"$1\"", fdLimit), bin, ws)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "ECTO_DATA_DIR=" + filepath.Join(dir, "data"),
		"ECTO_BIND_HOST=127.0.0.1", "ECTO_BIND_PORT=0", "OBSERVER_TOKEN=" + adminToken, "ECTOLEDGER_AGENT_TOKEN=" + agentToken,
		"LLM_BACKEND=mock", "GUARD_REQUIRED=false", "ECTO_SANDBOX_PERMISSIVE=true",
		// A frequent collector keeps the heap readings close to what is
		// live.
		"GOGC=25",
		"API_RATE_LIMIT_PER_SECOND=1000000", "API_RATE_LIMIT_BURST=1000000",
		"SESSION_RATE_LIMIT_PER_SECOND=1000000", "SESSION_RATE_LIMIT_BURST=1000000",
		"ECTO_BODY_TIMEOUT_SECS=5", "ECTO_SESSION_IDLE_SECS=5",
		"ECTO_MAX_IDLE_SESSIONS=" + strconv.Itoa(sessions), "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN=" + strconv.Itoa((sessions+1)/2),
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	srv := &server{cmd: cmd, pid: cmd.Process.Pid}
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		srv.url, srv.addr = u, strings.TrimPrefix(u, "http://")
		return srv, nil
	case <-time.After(60 * time.Second):
		srv.kill()
		return nil, errors.New("serve did not print its listening line within 60 s")
	}
}

// stop sends SIGTERM and returns how long serve took to exit.
func (s *server) stop() (time.Duration, error) {
	t0 := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return time.Since(t0), err
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		return time.Since(t0), errors.New("serve did not exit within 60 s of SIGTERM")
	}
}

func (s *server) kill() {
	if s.cmd.ProcessState == nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// rssMiB and fds read the server's resident memory and open descriptors.
func (s *server) rssMiB() float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// heapMiB reads go_memstats_heap_inuse_bytes from the server's /metrics.
func (s *server) heapMiB(ctx context.Context) float64 {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f / (1 << 20)
		}
	}
	return 0
}

func (s *server) fds() int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	return len(ents)
}

// idleConn opens a connection from src, sends one keep-alive GET /healthz
// and returns the status (the connection stays open only when 200).
func idleConn(srv *server, src string) (net.Conn, int, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", srv.addr)
	if err != nil {
		return nil, 0, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		c.Close()
		return nil, 0, err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	c.SetDeadline(time.Time{})
	if res.StatusCode != 200 {
		c.Close()
		return nil, res.StatusCode, nil
	}
	return c, 200, nil
}

// phaseConnections is phases 1 and 2.
func phaseConnections(ctx context.Context, srv *server) error {
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	open := func(src string, n int) (map[int]int, error) {
		counts := map[int]int{}
		for i := 0; i < n && ctx.Err() == nil; i++ {
			c, code, err := idleConn(srv, src)
			if err != nil {
				counts[-1]++
				continue
			}
			counts[code]++
			if c != nil {
				held = append(held, c)
			}
		}
		return counts, ctx.Err()
	}
	fmt.Println("1. idle keep-alive connections from one address (per-address cap 512)")
	t0 := time.Now()
	c1, err := open("127.0.0.1", 600)
	if err != nil {
		return err
	}
	fmt.Printf("   600 attempts in %v: %d admitted, %d refused 429, %d errors; server holds %d descriptors\n\n",
		time.Since(t0).Round(time.Millisecond), c1[200], c1[429], c1[-1], srv.fds())

	fmt.Println("2. idle connections from eight more addresses (global cap derived from the limit)")
	t0 = time.Now()
	total := map[int]int{}
	for i := 2; i <= 9; i++ {
		c, err := open(fmt.Sprintf("127.0.0.%d", i), 512)
		if err != nil {
			return err
		}
		for k, v := range c {
			total[k] += v
		}
	}
	fds := srv.fds()
	_, code, err := idleConn(srv, "127.0.0.10")
	fmt.Printf("   4096 attempts in %v: %d admitted, %d refused 503, %d refused 429, %d errors; %d connections held in all; server holds %d of %d descriptors\n",
		time.Since(t0).Round(time.Millisecond), total[200], total[503], total[429], total[-1], len(held), fds, fdLimit)
	fmt.Printf("   a new peer while full: %d (err %v)\n", code, err)
	for _, c := range held {
		c.Close()
	}
	held = nil
	t0 = time.Now()
	for {
		if _, code, err := idleConn(srv, "127.0.0.10"); err == nil && code == 200 {
			break
		}
		if time.Since(t0) > 30*time.Second {
			return errors.New("the server did not serve again within 30 s of the connections closing")
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("   after closing them: served again within %v\n\n", time.Since(t0).Round(time.Millisecond))
	return nil
}

// phaseSlowBodies is phase 3.
func phaseSlowBodies(ctx context.Context, srv *server) error {
	const n = 400
	fmt.Printf("3. %d slow uploads with a token (1000-byte body, 9 bytes sent; ECTO_BODY_TIMEOUT_SECS=5)\n", n)
	var cut, open atomic.Int64
	var slowest atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < n && ctx.Err() == nil; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(fmt.Sprintf("127.0.1.%d", 1+i%200))}, Timeout: 5 * time.Second}
			c, err := d.Dial("tcp", srv.addr)
			if err != nil {
				return
			}
			defer c.Close()
			start := time.Now()
			fmt.Fprintf(c, "POST /api/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"goal\":", adminToken)
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					open.Add(1)
					return
				}
			}
			cut.Add(1)
			for d := int64(time.Since(start)); ; {
				cur := slowest.Load()
				if d <= cur || slowest.CompareAndSwap(cur, d) {
					break
				}
			}
		}(i)
	}
	wg.Wait()
	fmt.Printf("   %d cut by the server, %d still open after 30 s; the slowest was cut after %v (all done in %v)\n\n",
		cut.Load(), open.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	return nil
}

// phaseSessions is phase 4.
func phaseSessions(ctx context.Context, srv *server, n int) error {
	fmt.Printf("4. %d idle API sessions (agent_loop false), caps %d per token and %d in all\n", n, (n+1)/2, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 60 * time.Second}
	create := func(tok string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.url+"/api/sessions", strings.NewReader(`{"goal":"wait for intents","agent_loop":false}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode, nil
	}
	before, beforeHeap := srv.rssMiB(), srv.heapMiB(ctx)
	t0 := time.Now()
	var made, failed atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan string)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tok := range jobs {
				if code, err := create(tok); err == nil && code == 200 {
					made.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	tenth := n / 10
	var tenthRSS, tenthHeap float64
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if i == tenth {
			// Sample at a tenth of the sessions, once those are made.
			for made.Load()+failed.Load() < int64(tenth) {
				time.Sleep(10 * time.Millisecond)
			}
			tenthRSS, tenthHeap = srv.rssMiB(), srv.heapMiB(ctx)
		}
		tok := adminToken
		if i%2 == 1 {
			tok = agentToken
		}
		jobs <- tok
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	live, liveHeap := srv.rssMiB(), srv.heapMiB(ctx)
	fmt.Printf("   created %d (%d failed) in %v\n", made.Load(), failed.Load(), time.Since(t0).Round(time.Millisecond))
	fmt.Printf("   RSS %.0f MiB before, %.0f MiB at %d sessions, %.0f MiB at %d; Go heap in use %.0f, %.0f, %.0f MiB\n",
		before, tenthRSS, tenth, live, made.Load(), beforeHeap, tenthHeap, liveHeap)
	if k := made.Load() - int64(tenth); k > 0 {
		fmt.Printf("   growth from %d to %d sessions: %.1f KiB RSS and %.1f KiB heap per session\n",
			tenth, made.Load(), (live-tenthRSS)*1024/float64(k), (liveHeap-tenthHeap)*1024/float64(k))
	}
	perTok, _ := create(adminToken)
	fmt.Printf("   one more from a token at its cap: %d\n", perTok)
	// A third token, so that only the global cap is in the way.
	body, _ := json.Marshal(map[string]any{"role": "agent", "label": "loadlimits"})
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.url+"/api/tokens", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	var tok struct {
		Token string `json:"token"`
	}
	json.NewDecoder(res.Body).Decode(&tok)
	res.Body.Close()
	global, _ := create(tok.Token)
	fmt.Printf("   one more from a fresh token with the instance at its cap: %d\n", global)
	select {
	case <-time.After(12 * time.Second): // past ECTO_SESSION_IDLE_SECS and an eviction sweep
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Printf("   after they went dormant (idle 5 s): RSS %.0f MiB, Go heap in use %.0f MiB\n", srv.rssMiB(), srv.heapMiB(ctx))
	took, err := srv.stop()
	fmt.Printf("   graceful shutdown recording the end of all %d: %v (err %v)\n", made.Load(), took.Round(time.Millisecond), err)
	return nil
}
