package config

// Sandbox configures command confinement (sandbox.md).
type Sandbox struct {
	// Permissive is ECTO_SANDBOX_PERMISSIVE=true: run without OS
	// confinement, warn on every action and record it. Development only.
	Permissive bool
	// Tier is ECTO_SANDBOX_TIER: "" (select automatically), native,
	// docker or firecracker.
	Tier string
}

func loadSandbox(r *reader) Sandbox {
	var s Sandbox
	if v, ok := r.get("ECTO_SANDBOX_PERMISSIVE"); ok {
		switch v {
		case "true":
			s.Permissive = true
		case "false":
		default:
			// Only the two documented spellings: a typo such as "ture"
			// must not silently mean either mode.
			r.fail("ECTO_SANDBOX_PERMISSIVE", v, "unknown value", "true, false, or unset")
		}
	}
	s.Tier = r.enum("ECTO_SANDBOX_TIER", "", "native", "docker", "firecracker")
	return s
}
