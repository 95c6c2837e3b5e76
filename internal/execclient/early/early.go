// Package early runs exec's thin path (package execclient) during package
// initialisation, before the rest of the ironvise binary is initialised.
// cmd/ironvise imports it for that side effect alone; nothing else may.
//
// Like the sandbox launcher's (internal/sandbox/native/launch/early), this
// is an exception to the rule of no init() side effects: Go initialises
// every package a program links before main runs (168 of ironvise's have
// initialisers), and a daemon exec needs none of them. Go initialises a
// package as soon as everything it imports is, taking the first by import
// path among those ready, so this package runs right after package os —
// before reflect, strings, net and everything that imports them — as long
// as package execclient keeps to the imports its tests allow. On the thin
// path the process runs 23 initialisers instead of 168 and costs about
// half the CPU time (docs/operate/performance.md#daemon-path).
//
//	import _ "github.com/ironvise/ironvise/internal/execclient/early"
//
// # Limitations
//
// Only `ironvise exec ...` is looked at, and only when execclient.Thin can
// handle it exactly as the full command line would; everything else
// continues into main untouched.
package early

import (
	"os"

	"github.com/ironvise/ironvise/internal/execclient"
)

func init() {
	if handled, code := execclient.Thin(os.Args); handled {
		os.Exit(code)
	}
}
