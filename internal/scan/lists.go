package scan

// listMask selects regex lists; a pattern belongs to exactly one.
type listMask uint8

// The lists of checks.md §10.2.
const (
	maskInjection listMask = 1 << iota
	maskExfil
	maskHighOnly
)

// patternDef is one entry of a regex list, as checks.md §10.2 writes it.
// Unless raw is set, re is written in lowercase without (?i) and runs on the
// ASCII-lowercased copy of the text. Every match contains one of hints
// (lowercase, or exact case when raw); the scanner runs re only when a hint
// occurs.
type patternDef struct {
	list  listMask
	label string
	raw   bool
	hints []string
	re    string
}

// builtinPatterns returns the regex lists of checks.md §10.2, verbatim.
// It is a function, not a package variable, so the lists cannot be changed
// at run time.
func builtinPatterns() []patternDef {
	return []patternDef{
		// injection
		{maskInjection, "ignore_previous_instructions", false, []string{"ignore"},
			`ignore\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier)\s+(instructions?|prompts?|rules?|directions?)`},
		{maskInjection, "you_are_now", false, []string{"you"},
			`you\s+are\s+now\s+(a|an|the)\s+\w`},
		{maskInjection, "disregard", false, []string{"disregard"},
			`disregard\s+(all\s+|any\s+)?(previous|prior|above|earlier|these|your)\s+(instructions?|commands?|rules?|guidelines?)`},
		{maskInjection, "new_instructions", false, []string{"new"},
			`new\s+instructions?\s*:`},
		{maskInjection, "system_prompt_request", false, []string{"prompt"},
			`(reveal|print|output|show|repeat|leak)\s+(your\s+|the\s+)?(system|hidden)\s+prompt`},
		{maskInjection, "llm_template_tags", false, []string{"sys", "instruction", "inst]", "<|"},
			`<\s*/?\s*(system|instructions?)\s*>|\[/?inst\]|\[/?sys\]|<<\s*/?sys\s*>>|<\|(im_start|im_end|system|user|assistant|endoftext)\|>`},
		{maskInjection, "embedded_action_json", false, []string{`"action"`},
			`"action"\s*:\s*"(run_command|read_file|http_get|complete)"`},
		{maskInjection, "role_injection", false, []string{"assistant:", "human:", "ai:"},
			`(?m)^[ \t]*(assistant|human|ai):[ \t]*$`},
		{maskInjection, "markdown_fence_action_json", false, []string{"```"},
			"```\\s*json\\s*\\n\\s*\\{[^`]{0,1000}\"action\"\\s*:"},
		{maskInjection, "base64_encoded_json", true, []string{"eyJ"},
			`eyJ[A-Za-z0-9+/_-]{20,}={0,2}`},
		{maskInjection, "prompt_continuation_marker", false, []string{"====", "-----"},
			`(?m)^[ \t]*(={4,}|-{5,})[ \t]*(system|new\s+instructions?|override|task)\b`},
		{maskInjection, "data_uri_scheme", false, []string{"data:", "javascript:", "vbscript:"},
			`\b(data:[a-z]+/[a-z0-9.+-]+[;,]|javascript:|vbscript:)`},

		// exfil
		{maskExfil, "curl_base64", false, []string{"curl"},
			`curl\s[^\n|]{0,512}\|\s*base64\b`},
		{maskExfil, "wget_base64", false, []string{"wget"},
			`wget\s[^\n|]{0,512}\|\s*base64\b`},
		{maskExfil, "pipe_base64", false, []string{"base64"},
			`(?m)\|\s*base64(\s+-[a-z-]+)*[ \t]*$`},
		{maskExfil, "download_pipe_shell", false, []string{"curl", "wget"},
			`(curl|wget)\s[^\n|]{0,512}\|\s*(sudo\s+)?(ba|da|z|k)?sh\b`},
		{maskExfil, "shell_command_substitution", false, []string{"$("},
			`\$\(\s*((curl|wget|nc|ncat|bash|sh|python[0-9.]*|perl|id|whoami|uname)\b|cat\s+/etc/)[^()\n]{0,200}\)`},
		{maskExfil, "shell_backtick_substitution", false, []string{"`"},
			"`\\s*((curl|wget|nc|ncat|bash|sh|python[0-9.]*|perl|id|whoami|uname)\\b|cat\\s+/etc/)[^`\\n]{0,200}`"},
		{maskExfil, "url_sensitive_path_exfil", false, []string{"curl", "wget", "invoke-webrequest", "iwr"},
			`(curl|wget|invoke-webrequest|iwr)\s+https?://\S+/(etc/shadow|etc/passwd|etc/master\.passwd|\.ssh|\.aws|\.env|config[/\\]sam|ntds\.dit|\.azure|keychains)`},
		{maskExfil, "dns_exfil", false, []string{".attacker.", ".evil.", ".exfil.", ".c2."},
			`(nslookup|dig|host)\s[^\n]{0,256}\.(attacker|evil|exfil|c2)\.(com|net|org|io)\b`},

		// high_only
		{maskHighOnly, "disregard_broad", false, []string{"disregard"},
			`\bdisregard\b`},
		{maskHighOnly, "you_are_now_broad", false, []string{"you"},
			`\byou\s+are\s+now\b`},
		{maskHighOnly, "shell_substitution_any", false, []string{"$(", "`"},
			"\\$\\([^()\\n]{1,200}\\)|`[^`\\n]{1,200}`"},
		{maskHighOnly, "system_prompt_mention", false, []string{"prompt", "message"},
			`\b(system|developer)\s+(prompt|message)\b`},
	}
}

// payloadPattern is the command-payload test for decoded goal text (checks.md
// §9 step 5). The spec writes one leading \b for every alternative; before
// "/dev/tcp/" and "/etc/…" that \b would demand a word character in front of
// the slash, so "cat /etc/passwd" would pass. The word boundary therefore
// applies to the word alternatives only, and the paths match anywhere.
const payloadPattern = `(?i)\b(sudo|rm\s+-[a-z]*r|mkfs|dd\s+if=|chmod\s+777|curl|wget|nc\s+-e|bash\s+-i)|/dev/tcp/|/etc/shadow|/etc/passwd`
