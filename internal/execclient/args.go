package execclient

// Flag is how the thin path treats one of exec's flags. internal/cli's
// tests enumerate the flags of exec's cobra command and require each to be
// listed here, a string flag with cobra's default when String is true.
type Flag struct {
	Name string
	// String: a string flag the thin path reads itself; otherwise its
	// presence leaves the command line to cobra.
	String  bool
	Default string
	set     func(*Options, string)
}

var flags = []Flag{
	{Name: "session", String: true, set: func(o *Options, v string) { o.Session = v }},
	{Name: "workspace", String: true, set: func(o *Options, v string) { o.Workspace = v }},
	{Name: "policy", String: true, set: func(o *Options, v string) { o.Policy = v }},
	{Name: "policy-sha256", String: true, set: func(o *Options, v string) { o.PolicySHA256 = v }},
	{Name: "workspace-mode", String: true, set: func(o *Options, v string) { o.WorkspaceMode = v }},
	{Name: "justification", String: true, Default: DefaultJustification, set: func(o *Options, v string) { o.Justification = v }},
	// --no-daemon runs in-process, which only the full command line can.
	{Name: "no-daemon"},
	// --json and --quiet: the full command line reports the result.
	{Name: "json"},
	{Name: "quiet"},
	{Name: "help"},
}

// Flags lists exec's flags as the thin path knows them.
func Flags() []Flag { return append([]Flag(nil), flags...) }

func lookupFlag(name string) *Flag {
	for i := range flags {
		if flags[i].Name == name {
			return &flags[i]
		}
	}
	return nil
}

// ParseArgs reads `ironvise exec ...` (args is os.Args) into Options when
// it can read it exactly as exec's cobra command would, and reports false
// for anything else: another command, an unknown, boolean or shorthand
// flag, a flag value that starts with a dash, a flag after the command's
// first word (cobra's parser reads those too), or no command. Those are
// left to cobra, which also says what is wrong with them.
func ParseArgs(args []string) (Options, bool) {
	if len(args) < 2 || args[1] != "exec" {
		return Options{}, false
	}
	o := Options{Justification: DefaultJustification}
	rest := args[2:]
	var words []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			words = append(words, rest[i+1:]...)
			i = len(rest)
		case len(a) > 0 && a[0] == '-':
			if len(words) > 0 || len(a) < 3 || a[1] != '-' {
				return Options{}, false
			}
			name, value, inline := cutByte(a[2:], '=')
			f := lookupFlag(name)
			if f == nil || !f.String {
				return Options{}, false
			}
			if !inline {
				if i+1 >= len(rest) || len(rest[i+1]) > 0 && rest[i+1][0] == '-' {
					return Options{}, false
				}
				i++
				value = rest[i]
			}
			f.set(&o, value)
		default:
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return Options{}, false
	}
	o.Command = JoinCommand(words)
	return o, true
}

// cutByte is strings.Cut for one byte.
func cutByte(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
