package config

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// OSLookup returns a Lookup over the process environment, falling back to
// the KEY=VALUE lines of dotenvPath when that file exists
// (docs/design/cli.md#conventions: a .env in the working directory is loaded;
// the environment wins). A malformed .env is an error naming the file and
// line.
func OSLookup(dotenvPath string) (Lookup, error) {
	file, err := readDotEnv(dotenvPath)
	if err != nil {
		return nil, err
	}
	return func(name string) (string, bool) {
		if v, ok := os.LookupEnv(name); ok {
			return v, true
		}
		v, ok := file[name]
		return v, ok
	}, nil
}

// readDotEnv parses a .env file: blank lines and # comments are skipped, an
// optional "export " prefix is allowed, values may be single- or
// double-quoted. A missing file yields an empty map.
func readDotEnv(path string) (map[string]string, error) {
	out := map[string]string{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: open %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("config: %s:%d: expected KEY=VALUE", path, line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"') {
			uq, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("config: %s:%d: %s: bad double-quoted value: %w", path, line, k, err)
			}
			v = uq
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		out[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	return out, nil
}
