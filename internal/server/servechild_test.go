package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// serveChildEnv makes this test binary a serve process (TestMain): its
// value is a serveChildSpec in JSON. The parent kills it with SIGKILL.
const serveChildEnv = "IRONVISE_TEST_SERVE_CHILD"

type serveChildSpec struct {
	Env       map[string]string `json:"env"`
	Workspace string            `json:"workspace"`
	LeaseMS   int               `json:"lease_ms"`
}

// serveChild runs a server until it is killed.
func serveChild(specJSON string) int {
	var spec serveChildSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	cfg, err := config.Load(config.MapLookup(spec.Env))
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	tier, err := sandbox.Select(sandbox.Options{Permissive: true, Timeout: 20 * time.Second}, sandbox.Factories{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	protect, err := secretpaths.Compute(secretpaths.Sources{DataDir: cfg.DataDir, Home: cfg.Host.Home})
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	srv, err := New(context.Background(), Options{Config: cfg, Lookup: config.MapLookup(spec.Env), Workspace: spec.Workspace,
		Protected: protect, Tier: tier, Version: "test", Stderr: os.Stderr, LeaseDuration: time.Duration(spec.LeaseMS) * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	if err := srv.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "serve child:", err)
		return 2
	}
	select {}
}
