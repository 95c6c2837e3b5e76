package scan

// listMask selects regex lists; a pattern belongs to exactly one.
type listMask uint8

// The lists of docs/design/checks.md#scanner-regex-lists.
const (
	maskInjection listMask = 1 << iota
	maskExfil
	maskHighOnly
)

// patternDef is one entry of a regex list, as
// docs/design/checks.md#scanner-regex-lists writes it. Unless raw is set, re
// is written in lowercase without (?i) and runs on the ASCII-lowercased copy
// of the text. Every match contains one of hints (lowercase, or exact case
// when raw); the scanner runs re only when a hint occurs. A match is withheld
// from the model (fenced) from sensitivity fence on, and only labeled below
// it.
type patternDef struct {
	list  listMask
	label string
	raw   bool
	hints []string
	re    string
	fence Sensitivity
}

// builtinPatterns returns the regex lists: those of
// docs/design/checks.md#scanner-regex-lists, with word boundaries so that a
// match never starts or ends inside a word ("you are now a member" is not
// "you are now a m"), and the phrasings that list missed (docs/scanner.md
// lists them). It is a function, not a package variable, so the lists cannot
// be changed at run time.
//
// The injection list addresses the model and is withheld from it from
// medium on. The exfiltration list describes commands; a repository under
// audit is full of them (a README's curl … | sh, a Makefile's backticks,
// USER=$(whoami) in a script), so at medium they are labeled for the
// record and the model still reads them; at high they are withheld too.
func builtinPatterns() []patternDef {
	inj := func(label string, hints []string, re string) patternDef {
		return patternDef{maskInjection, label, false, hints, re, Medium}
	}
	injLabel := func(label string, hints []string, re string) patternDef {
		return patternDef{maskInjection, label, false, hints, re, High}
	}
	exfil := func(label string, hints []string, re string) patternDef {
		return patternDef{maskExfil, label, false, hints, re, High}
	}
	high := func(label string, hints []string, re string) patternDef {
		return patternDef{maskHighOnly, label, false, hints, re, High}
	}
	return []patternDef{
		// injection
		inj("ignore_previous_instructions", []string{"ignore"},
			`\bignore\s+(all\s+|any\s+|the\s+)?(previous|prior|above|earlier)\s+(instructions?|prompts?|rules?|directions?)\b`),
		// "Ignore the above and instead output …": no noun after "above",
		// but a turn to a new order.
		inj("ignore_above_instead", []string{"ignore"},
			`\bignore\s+(all\s+|everything\s+|any\s+)?(of\s+)?(the\s+|that\s+|this\s+)?(above|previous|prior|earlier|preceding|foregoing)(\s+[a-z]{1,20}){0,3}\s*(,|\.|;|:|!|-|and|then)\s*(instead|now|just|only|output|print|say|write|respond|reply|tell|reveal|repeat|return)\b`),
		// A role the text assigns to the model, not "you are now a member".
		inj("you_are_now", []string{"you"},
			`\byou\s+are\s+now\s+((a|an|the)\s+([a-z-]{1,20}\s+){0,3}(assistant|ai|model|chatbot|bot|agent|persona|character|shell|terminal|hacker|dan|jailbreak|jailbroken|unrestricted|unfiltered|uncensored|evil)|in\s+([a-z]{1,20}\s+)?mode|dan|jailbroken|unrestricted|unfiltered|uncensored|free\s+(of|from))\b`),
		inj("disregard", []string{"disregard"},
			`\bdisregard\s+(all\s+|any\s+)?(previous|prior|above|earlier|these|your)\s+(instructions?|commands?|rules?|guidelines?)\b`),
		// "Forget everything you were told."
		inj("forget_instructions", []string{"forget"},
			`\bforget\s+(about\s+)?((everything|all|anything|whatever)\s+((that\s+)?you\s+(were|have\s+been|'ve\s+been)\s+(told|given|instructed|taught|asked)|above|before|so\s+far|previously|i\s+(said|told\s+you)|(of\s+)?(your|the|these|those)\s+(previous\s+|prior\s+|original\s+|earlier\s+)?(instructions?|prompts?|rules|guidelines|directions?))|your\s+(previous\s+|prior\s+|original\s+)?(instructions?|prompts?|rules|guidelines|programming|training|directives?)|(the|all|any)\s+(previous|prior|above|earlier|original)\s+(instructions?|prompts?|rules|guidelines|directions?|context|messages?))\b`),
		inj("new_instructions", []string{"new"},
			`\bnew\s+instructions?\s*:`),
		inj("system_prompt_request", []string{"prompt", "instructions"},
			`\b(reveal|print|output|show|repeat|leak|display|dump)\s+([a-z]{1,20}\s+){0,5}((your|the|its)\s+)?(full\s+|entire\s+|complete\s+)?(system|hidden|initial|original|secret)\s+(prompt|instructions)\b`),
		inj("llm_template_tags", []string{"sys", "instruction", "inst]", "<|"},
			`<\s*/?\s*(system|instructions?)\s*>|\[/?inst\]|\[/?sys\]|<<\s*/?sys\s*>>|<\|(im_start|im_end|system|user|assistant|endoftext)\|>`),
		inj("embedded_action_json", []string{`"action"`},
			`"action"\s*:\s*"(run_command|read_file|http_get|complete|write_file)"`),
		inj("role_injection", []string{"assistant:", "human:", "ai:"},
			`(?m)^[ \t]*(assistant|human|ai):[ \t]*$`),
		// "SYSTEM: …" at the start of a line, or a role line that goes
		// on to address the model; the rest of the line goes with it.
		{maskInjection, "role_prefix", true, []string{"SYSTEM"}, `(?m)^[ \t]*SYSTEM(\s+PROMPT)?[ \t]*:[^\n]{0,500}`, Medium},
		inj("role_prefix", []string{"system", "assistant"},
			`(?m)^[ \t]*(system|assistant)[ \t]*:[ \t]*(you|ignore|disregard|forget|from\s+now|new\s+instructions?|the\s+user|your|always|never|do\s+not)\b[^\n]{0,500}`),
		// "### Instruction:" (Alpaca-style prompt headers) and the
		// paragraph under it.
		inj("instruction_header", []string{"#"},
			`(?m)^[ \t]*#{1,6}[ \t]*(instructions?|system(\s+prompt)?|new\s+instructions?)[ \t]*:[^\n]{0,300}(\n[^\n]{1,200}){0,4}`),
		inj("markdown_fence_action_json", []string{"```"},
			"```\\s*json\\s*\\n\\s*\\{[^`]{0,1000}\"action\"\\s*:"),
		// JWTs are credentials and redacted before the scan; another eyJ
		// run is decoded by the base64 pass, which withholds it when it
		// holds an action or an injection.
		{maskInjection, "base64_encoded_json", true, []string{"eyJ"}, `eyJ[A-Za-z0-9+/_-]{20,}={0,2}`, High},
		inj("prompt_continuation_marker", []string{"====", "-----"},
			`(?m)^[ \t]*(={4,}|-{5,})[ \t]*(system|new\s+instructions?|override|task)\b`),
		// data: URIs are ordinary in HTML and CSS: labeled, withheld at
		// high.
		injLabel("data_uri_scheme", []string{"data:", "javascript:", "vbscript:"},
			`\b(data:[a-z]+/[a-z0-9.+-]+[;,]|javascript:|vbscript:)`),
		// ![x](https://host/?d=…): an image whose URL carries a template
		// or a long value; a model that renders it sends the data away.
		inj("markdown_image_exfil", []string{"!["},
			`!\[[^\]\n]{0,200}\]\(\s*<?https?://[^\s)>]{1,300}[?&][a-z0-9_.-]{1,30}=(\{|<|\$|\[[a-z_ ]{1,30}\]|%7b|%3c|%24|…|\.\.\.|[a-z0-9+/=_%-]{24,})`),

		// exfil
		exfil("curl_base64", []string{"curl"},
			`\bcurl\s[^\n|]{0,512}\|\s*base64\b`),
		exfil("wget_base64", []string{"wget"},
			`\bwget\s[^\n|]{0,512}\|\s*base64\b`),
		exfil("pipe_base64", []string{"base64"},
			`(?m)\|\s*base64(\s+-[a-z-]+)*[ \t]*$`),
		exfil("download_pipe_shell", []string{"curl", "wget"},
			`\b(curl|wget)\s[^\n|]{0,512}\|\s*(sudo\s+)?(ba|da|z|k)?sh\b`),
		exfil("shell_command_substitution", []string{"$("},
			`\$\(\s*((curl|wget|nc|ncat|bash|sh|python[0-9.]*|perl|id|whoami|uname)\b|cat\s+/etc/)[^()\n]{0,200}\)`),
		exfil("shell_backtick_substitution", []string{"`"},
			"`\\s*((curl|wget|nc|ncat|bash|sh|python[0-9.]*|perl|id|whoami|uname)\\b|cat\\s+/etc/)[^`\\n]{0,200}`"),
		exfil("url_sensitive_path_exfil", []string{"curl", "wget", "invoke-webrequest", "iwr"},
			`\b(curl|wget|invoke-webrequest|iwr)\s+https?://\S+/(etc/shadow|etc/passwd|etc/master\.passwd|\.ssh|\.aws|\.env|config[/\\]sam|ntds\.dit|\.azure|keychains)`),
		exfil("dns_exfil", []string{".attacker.", ".evil.", ".exfil.", ".c2."},
			`\b(nslookup|dig|host)\s[^\n]{0,256}\.(attacker|evil|exfil|c2)\.(com|net|org|io)\b`),

		// high_only
		high("disregard_broad", []string{"disregard"},
			`\bdisregard\b`),
		high("you_are_now_broad", []string{"you"},
			`\byou\s+are\s+now\b`),
		high("shell_substitution_any", []string{"$(", "`"},
			"\\$\\([^()\\n]{1,200}\\)|`[^`\\n]{1,200}`"),
		high("system_prompt_mention", []string{"prompt", "message"},
			`\b(system|developer)\s+(prompt|message)\b`),
		high("new_task", []string{"new"},
			`\bnew\s+(task|goal|objective|mission)\s*:`),
	}
}

// payloadPattern is the command-payload test for decoded goal text
// (docs/design/checks.md#prompt-scan step 5). One leading \b for every
// alternative would be wrong: before "/dev/tcp/" and "/etc/…" that \b would demand
// a word character in front of the slash, so "cat /etc/passwd" would pass.
// The word boundary therefore applies to the word alternatives only, and the
// paths match anywhere.
const payloadPattern = `(?i)\b(sudo|rm\s+-[a-z]*r|mkfs|dd\s+if=|chmod\s+777|curl|wget|nc\s+-e|bash\s+-i)|/dev/tcp/|/etc/shadow|/etc/passwd`
