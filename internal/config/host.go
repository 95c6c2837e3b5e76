package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// Host locates the secrets of the user IronVise runs as that no command may
// see: the home directory and the variables that move a tool's credential
// store elsewhere (package secretpaths).
type Host struct {
	// Home is $HOME (%USERPROFILE% on Windows when HOME is unset), or the
	// OS's idea of the home directory; "" when there is none.
	Home string
	// ConfigHome and DataHome are $XDG_CONFIG_HOME and $XDG_DATA_HOME when
	// absolute (the XDG specification says to ignore relative values).
	ConfigHome, DataHome string
	// AppData and LocalAppData are %APPDATA% and %LOCALAPPDATA% (Windows).
	AppData, LocalAppData string
	// Stores are credential stores that their tools' variables name,
	// absolute (a relative value is taken from the working directory, as
	// the tools do), keyed by the variable.
	Stores []Store
}

// Store is one credential store named by a variable.
type Store struct {
	Var  string
	Path string
}

// storeVars are the variables that move a credential store, and the file
// inside the directory they name that holds the secret ("" for the whole
// directory or file). KUBECONFIG is a path list.
var storeVars = []struct{ name, file string }{
	{"KUBECONFIG", ""},
	{"DOCKER_CONFIG", "config.json"},
	{"AWS_SHARED_CREDENTIALS_FILE", ""},
	{"AWS_CONFIG_FILE", ""},
	{"GNUPGHOME", ""},
	{"CLOUDSDK_CONFIG", ""},
	{"AZURE_CONFIG_DIR", ""},
	{"PASSWORD_STORE_DIR", ""},
	{"NETRC", ""},
	{"NPM_CONFIG_USERCONFIG", ""},
	{"GH_CONFIG_DIR", ""},
}

func loadHost(r *reader) Host {
	var h Host
	if v, ok := r.get("HOME"); ok {
		h.Home = v
	} else if v, ok := r.get("USERPROFILE"); ok && runtime.GOOS == "windows" {
		h.Home = v
	} else if d, err := os.UserHomeDir(); err == nil {
		h.Home = d
	}
	if !filepath.IsAbs(h.Home) {
		h.Home = "" // a relative HOME names no directory to protect
	}
	abs := func(name string) string {
		if v, ok := r.get(name); ok && filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
		return ""
	}
	h.ConfigHome, h.DataHome = abs("XDG_CONFIG_HOME"), abs("XDG_DATA_HOME")
	h.AppData, h.LocalAppData = abs("APPDATA"), abs("LOCALAPPDATA")
	for _, sv := range storeVars {
		v, ok := r.get(sv.name)
		if !ok {
			continue
		}
		for _, p := range filepath.SplitList(v) {
			if p == "" {
				continue
			}
			if a, err := filepath.Abs(p); err == nil {
				p = a
			}
			if sv.file != "" {
				p = filepath.Join(p, sv.file)
			}
			h.Stores = append(h.Stores, Store{Var: sv.name, Path: p})
		}
	}
	return h
}
