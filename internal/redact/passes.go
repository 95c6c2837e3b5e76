package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
)

// pass is a hand-written detector, run at the occurrences of its keywords.
type pass struct {
	id       string
	words    []string // lowercase keywords
	keywords []int    // their ids in the keyword index
	// find reports the secrets around the sorted occurrences occ of the
	// keywords in t (lower is t ASCII-lowercased).
	find func(t string, lower []byte, occ []int, emit func(Finding))
}

func builtinPasses() []pass {
	return []pass{
		{id: rulePrivateKey, words: []string{"-----begin"}, find: findPrivateKeys},
		{id: ruleJWT, words: []string{"eyj"}, find: findJWTs},
		{id: ruleURLPass, words: []string{"://"}, find: findURLPasswords},
		{id: ruleKeyValue, words: []string{"pass", "pwd", "secret", "token", "key", "auth", "credential"}, find: findKeyValues},
	}
}

// maxPEMBlock bounds how far the END line of a private key is looked for.
const maxPEMBlock = 64 << 10

// findPrivateKeys finds PEM private-key blocks: "-----BEGIN … PRIVATE
// KEY-----" to its END line. A block whose END line is missing (the
// observation was cut, or only the first lines were printed) runs over the
// lines that look like its body, so a cut key is not left half visible. A
// block inside a JSON string separates its lines with \n escapes.
func findPrivateKeys(t string, lower []byte, occ []int, emit func(Finding)) {
	n := len(lower)
	next := 0
	for _, p := range occ {
		if p < next {
			continue
		}
		labelStart := p + len("-----begin")
		c := bytes.Index(lower[labelStart:min(n, labelStart+100)], []byte("-----"))
		if c < 0 || !bytes.Contains(lower[labelStart:labelStart+c], []byte("private key")) {
			continue
		}
		headerEnd := labelStart + c + 5
		limit := min(n, headerEnd+maxPEMBlock)
		rest := lower[headerEnd:limit]
		end := -1
		if e := bytes.Index(rest, []byte("-----end")); e >= 0 {
			if b := bytes.Index(rest[:e], []byte("-----begin")); b < 0 {
				from := headerEnd + e + len("-----end")
				if c := bytes.Index(lower[from:min(n, from+120)], []byte("-----")); c >= 0 {
					end = from + c + 5
				}
			}
		}
		if end < 0 {
			end = pemBodyEnd(t, headerEnd)
		}
		if end > headerEnd {
			emit(Finding{Rule: rulePrivateKey, Start: p, End: end})
			next = end
		}
	}
}

// pemBodyEnd returns the end of the lines after a PEM header that look like
// the block's body: base64 lines, "Name: value" headers (Proc-Type,
// DEK-Info) and blank lines. Lines end at a newline or a \n escape.
func pemBodyEnd(t string, from int) int {
	end, pos := from, from
	for pos < len(t) {
		sep := sepLen(t, pos)
		if sep == 0 {
			return end // the header or the last line goes on with other text
		}
		pos += sep
		le := pos
		for le < len(t) && sepLen(t, le) == 0 {
			le++
		}
		switch line := strings.TrimSpace(t[pos:le]); {
		case line == "":
		case isBase64Line(line) || isPEMHeaderLine(line):
			end = le
		default:
			return end
		}
		pos = le
	}
	return end
}

// sepLen returns the length of the line separator at t[i:] (a newline, CR
// LF, or their escapes in a JSON string), or 0.
func sepLen(t string, i int) int {
	rest := t[i:]
	switch {
	case strings.HasPrefix(rest, "\r\n"):
		return 2
	case strings.HasPrefix(rest, "\n"), strings.HasPrefix(rest, "\r"):
		return 1
	case strings.HasPrefix(rest, `\r\n`):
		return 4
	case strings.HasPrefix(rest, `\n`), strings.HasPrefix(rest, `\r`):
		return 2
	}
	return 0
}

func isBase64Line(s string) bool {
	if len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnumByte(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

func isPEMHeaderLine(s string) bool {
	i := strings.IndexByte(s, ':')
	if i <= 0 || i > 32 {
		return false
	}
	for j := 0; j < i; j++ {
		if c := s[j]; !isAlnumByte(c) && c != '-' {
			return false
		}
	}
	return true
}

func isB64URLByte(c byte) bool { return isAlnumByte(c) || c == '-' || c == '_' }

// findJWTs finds JSON Web Tokens (and JWE compact serialisations): dot-
// separated base64url segments whose first two start with "eyJ" (the
// encoding of `{"`) and whose first decodes to a JOSE header.
func findJWTs(t string, _ []byte, occ []int, emit func(Finding)) {
	next := 0
	for _, p := range occ {
		if p < next || !strings.HasPrefix(t[p:], "eyJ") || p > 0 && isB64URLByte(t[p-1]) {
			continue
		}
		segEnd := func(i int) int {
			for i < len(t) && isB64URLByte(t[i]) {
				i++
			}
			return i
		}
		e1 := segEnd(p)
		if e1-p < 10 || e1 >= len(t) || t[e1] != '.' || !strings.HasPrefix(t[e1+1:], "eyJ") {
			continue
		}
		e2 := segEnd(e1 + 1)
		if e2-(e1+1) < 10 {
			continue
		}
		if !isJOSEHeader(t[p:e1]) {
			continue
		}
		end := e2
		// The signature (may be empty for alg "none"), and the further
		// segments of a JWE.
		for k := 0; k < 3 && end < len(t) && t[end] == '.'; k++ {
			end = segEnd(end + 1)
		}
		emit(Finding{Rule: ruleJWT, Start: p, End: end})
		next = end
	}
}

// isJOSEHeader reports whether seg decodes to a JSON object with an "alg",
// "typ" or "enc" member.
func isJOSEHeader(seg string) bool {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(seg, "="))
	if err != nil || !json.Valid(b) {
		return false
	}
	var hdr map[string]json.RawMessage
	if json.Unmarshal(b, &hdr) != nil {
		return false
	}
	_, alg := hdr["alg"]
	_, typ := hdr["typ"]
	_, enc := hdr["enc"]
	return alg || typ || enc
}

// findURLPasswords finds the password of scheme://user:password@host. The
// user and the host stay: they are evidence, the password is not.
func findURLPasswords(t string, lower []byte, occ []int, emit func(Finding)) {
	for _, p := range occ {
		// A scheme of at least two characters, starting with a letter.
		s := p
		for s > 0 && (isAlnumByte(lower[s-1]) || lower[s-1] == '+' || lower[s-1] == '.' || lower[s-1] == '-') {
			s--
		}
		if p-s < 2 || lower[s] < 'a' || lower[s] > 'z' {
			continue
		}
		a := p + 3
		e := a
		for e < len(t) && e-a < 1024 && !strings.ContainsRune(" \t\r\n/?#\"'<>`\\", rune(t[e])) {
			e++
		}
		auth := t[a:e]
		at := strings.LastIndexByte(auth, '@')
		if at <= 0 || at == len(auth)-1 || !isAlnumByte(auth[at+1]) && auth[at+1] != '[' {
			continue
		}
		colon := strings.IndexByte(auth[:at], ':')
		if colon < 0 {
			continue
		}
		pw := auth[colon+1 : at]
		if !plausibleSecret(pw, 3) {
			continue
		}
		emit(Finding{Rule: ruleURLPass, Start: a + colon + 1, End: a + at})
	}
}

// isKeyByte reports the bytes of a key name: [a-z0-9_.-] (lowercase copy).
func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// secretKeySuffixes are the endings of a key name (lowercase, '-' and '.'
// folded to '_') that say its value is a secret.
var secretKeySuffixes = []string{
	"password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "authorization",
	"api_key", "apikey", "access_key", "secret_key", "private_key", "auth_key", "master_key", "encryption_key",
	"signing_key", "client_key", "session_key", "app_key", "account_key", "service_key",
	"_pass", "_pwd", "_auth",
}

// secretKeyTrailers may follow the secret word in a key (secret_key_base).
var secretKeyTrailers = []string{"", "_base", "_value", "_b64", "_base64"}

// secretKey reports whether a key name (lowercase) names a secret.
func secretKey(k string) bool {
	// Fold '-' and '.' to '_' and drop leading underscores (--password),
	// without allocating: keys are short.
	var buf [64]byte
	if len(k) > len(buf) {
		k = k[len(k)-len(buf):]
	}
	n := 0
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '-' || c == '.' {
			c = '_'
		}
		if c == '_' && n == 0 {
			continue
		}
		buf[n] = c
		n++
	}
	f := string(buf[:n])
	switch f {
	case "pass", "pwd", "auth":
		return true
	}
	for _, tr := range secretKeyTrailers {
		base, ok := strings.CutSuffix(f, tr)
		if !ok {
			continue
		}
		for _, s := range secretKeySuffixes {
			if strings.HasSuffix(base, s) {
				return true
			}
		}
	}
	return false
}

// authSchemes may start the value of an Authorization header; the secret
// is the credential after the scheme.
var authSchemes = []string{"bearer", "basic", "token", "digest", "negotiate", "apikey"}

// findKeyValues finds values assigned to keys that name a secret:
// KEY=value, key: value, "key": "value", key => 'value', --key=value.
// Occurrences come in any order; a key holding two keywords is reported
// twice, and merged with itself later.
func findKeyValues(t string, lower []byte, occ []int, emit func(Finding)) {
	n := len(lower)
	for _, p := range occ {
		r := p
		for r < n && isKeyByte(lower[r]) {
			r++
		}
		// Cheapest test first: an assignment must follow the key.
		vs, ve, colonWord, ok := assignedValue(t, r)
		if !ok {
			continue
		}
		l := p
		for l > 0 && isKeyByte(lower[l-1]) {
			l--
		}
		if l > 0 && (lower[l-1] == '$' || lower[l-1] == '{') {
			continue // a reference to a variable, not an assignment
		}
		if !secretKey(string(lower[l:r])) {
			continue
		}
		val := t[vs:ve]
		// "Authorization: Bearer <token>": the secret is the credential
		// after the scheme, quoted or not.
		for _, sch := range authSchemes {
			if !strings.EqualFold(val, sch) && !(len(val) > len(sch) && strings.EqualFold(val[:len(sch)], sch) && val[len(sch)] == ' ') {
				continue
			}
			cs := vs + len(sch)
			for cs < n && t[cs] == ' ' {
				cs++
			}
			ce := cs
			for ce < n && ce-cs < 512 && !valueStop[t[ce]] {
				ce++
			}
			if len(val) > len(sch) {
				ce = ve // quoted: the credential runs to the closing quote
			}
			vs, ve = cs, ce
			val = t[vs:ve]
			break
		}
		if colonWord && !endsClause(t, ve) {
			continue
		}
		if !plausibleSecret(val, 4) {
			continue
		}
		emit(Finding{Rule: ruleKeyValue, Start: vs, End: ve})
	}
}

// assignedValue reads an assignment after a key ending at r: an optional
// closing quote (escaped or not), spaces, one of = : := =>, spaces, then a
// quoted value on the same line, or an unquoted one: after "=" a word that
// ends at a space or a shell operator (a shell or .env value), after ":" a
// word that ends at a space (YAML: "admin_password: hunter2|x=y"), less
// trailing punctuation. It returns the value's bounds, quotes excluded,
// and whether an unquoted value followed a colon.
func assignedValue(t string, r int) (vs, ve int, colonWord, ok bool) {
	n := len(t)
	i := r
	if i < n && t[i] == '\\' && i+1 < n && (t[i+1] == '"' || t[i+1] == '\'') {
		i += 2
	} else if i < n && (t[i] == '"' || t[i] == '\'') {
		i++
	}
	for i < n && (t[i] == ' ' || t[i] == '\t') {
		i++
	}
	colon := false
	switch {
	case strings.HasPrefix(t[i:], "=>"), strings.HasPrefix(t[i:], ":="):
		i += 2
	case i < n && t[i] == '=':
		if i+1 < n && t[i+1] == '=' {
			return 0, 0, false, false // a comparison
		}
		i++
	case i < n && t[i] == ':':
		if i+1 < n && t[i+1] == ':' {
			return 0, 0, false, false // a scope, a C++ name, an IPv6 address
		}
		i++
		colon = true
	default:
		return 0, 0, false, false
	}
	for i < n && (t[i] == ' ' || t[i] == '\t') {
		i++
	}
	if i >= n {
		return 0, 0, false, false
	}
	// Quoted values, plain or escaped inside a JSON string.
	for _, q := range []string{`\"`, `\'`, `"`, `'`, "`"} {
		if strings.HasPrefix(t[i:], q) {
			s := i + len(q)
			lim := min(n, s+512)
			k := strings.Index(t[s:lim], q)
			if k < 0 || strings.IndexByte(t[s:s+k], '\n') >= 0 {
				return 0, 0, false, false
			}
			return s, s + k, false, true
		}
	}
	s := i
	if colon {
		for i < n && i-s < 512 && t[i] != ' ' && t[i] != '\t' && t[i] != '\n' && t[i] != '\r' && !strings.HasPrefix(t[i:], `\n`) {
			i++
		}
		for i > s && strings.IndexByte(",;)]}", t[i-1]) >= 0 {
			i--
		}
		return s, i, true, i > s
	}
	for i < n && i-s < 512 && !valueStop[t[i]] {
		i++
	}
	return s, i, false, i > s
}

// endsClause reports whether only the end of the line, a comment or the
// end of an object or list member follows position i: after "key:", one
// word followed by more words is prose ("auth: token expired for bob"),
// not a value.
func endsClause(t string, i int) bool {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
		i++
	}
	return i >= len(t) || strings.IndexByte("\r\n#,;}])\"'\\", t[i]) >= 0
}

// valueStop holds the bytes that end an unquoted value.
var valueStop = func() (m [256]bool) {
	for _, c := range []byte(" \t\r\n\"'`,;)]}&<>|\\") {
		m[c] = true
	}
	return m
}()

// stopValues are values of a secret-named key that are not secrets.
var stopValues = map[string]bool{
	"true": true, "false": true, "null": true, "nil": true, "none": true, "undefined": true, "empty": true,
	"required": true, "optional": true, "string": true, "str": true, "bool": true, "bytes": true, "text": true,
	"secret": true, "password": true, "passwd": true, "token": true, "redacted": true, "hidden": true, "masked": true,
	"your_password": true, "yourpassword": true, "your-password": true, "your_token": true, "your-token": true,
	"your_api_key": true, "your-api-key": true, "example": true, "placeholder": true, "changeit": true,
}

// plausibleSecret reports whether v, the value of a secret-named key or a
// URL's password, may be a secret: not a placeholder, a variable or code
// reference, a path or a stop word, and with some entropy.
func plausibleSecret(v string, minLen int) bool {
	if len(v) < minLen || stopValues[strings.ToLower(v)] {
		return false
	}
	switch v[0] {
	case '$', '%', '<', '{', '[', '*', '@', '#':
		return false // ${VAR}, %VAR%, <password>, {{ x }}, [REDACTED…], ****, @file, #comment
	}
	if strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") ||
		len(v) > 2 && v[1] == ':' && v[2] == '\\' {
		return false // a path: a key file, not the key
	}
	if strings.ContainsAny(v, "()[") {
		return false // a call or an index: getpass(), os.environ["X"]
	}
	if isReference(v) {
		return false
	}
	return entropy(v) >= 2.0
}

// isReference reports a dotted identifier (settings.SECRET_KEY,
// process.env.TOKEN) or a constant name (GITHUB_TOKEN, CHANGEME): upper case
// with an underscore or without digits. An upper-case run with digits and no
// underscore (X9K2M4P7Q1) may be a generated secret and is not a reference.
func isReference(v string) bool {
	upper, digits, dotted := true, false, false
	for i, part := range strings.Split(v, ".") {
		if part == "" || !(part[0] == '_' || part[0] >= 'a' && part[0] <= 'z' || part[0] >= 'A' && part[0] <= 'Z') {
			return false
		}
		for j := 0; j < len(part); j++ {
			c := part[j]
			switch {
			case c >= 'a' && c <= 'z':
				upper = false
			case c >= '0' && c <= '9':
				digits = true
			case c >= 'A' && c <= 'Z', c == '_':
			default:
				return false
			}
		}
		dotted = dotted || i > 0
	}
	return dotted || upper && (strings.Contains(v, "_") || !digits)
}
