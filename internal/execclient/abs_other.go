//go:build !linux

package execclient

import (
	"path/filepath"
	"strings"
)

func abs(p string) (string, error) { return filepath.Abs(p) }

func containsSeparator(p string) bool { return strings.ContainsRune(p, filepath.Separator) }

// absAsOpened: without the daemon path, the request is never sent.
func absAsOpened(p string) (string, error) { return filepath.Abs(p) }
