package verdict

// Code is a stable reason code (docs/design/checks.md#reason-codes). Codes
// are part of the ledger format and the API: never rename one.
type Code string

// Reason codes, grouped by the check that emits them.
const (
	OK Code = "ok"

	// Schema (docs/design/checks.md#schema-check).
	SchemaTooLarge           Code = "schema_too_large"
	SchemaNotJSON            Code = "schema_not_json"
	SchemaDuplicateKey       Code = "schema_duplicate_key"
	SchemaUnknownKey         Code = "schema_unknown_key"
	SchemaMissingKey         Code = "schema_missing_key"
	SchemaType               Code = "schema_type"
	SchemaInvalidString      Code = "schema_invalid_string"
	SchemaUnknownAction      Code = "schema_unknown_action"
	SchemaJustificationShort Code = "schema_justification_short"
	SchemaFindingInvalid     Code = "schema_finding_invalid"
	SchemaFindingUnverified  Code = "schema_finding_unverified"

	// Policy (docs/design/checks.md#policy-engine).
	PolicyActionForbidden      Code = "policy_action_forbidden"
	PolicyActionNotAllowed     Code = "policy_action_not_allowed"
	PolicyExecutableNotAllowed Code = "policy_executable_not_allowed"
	PolicyDynamicProgram       Code = "policy_dynamic_program"
	PolicyCommandRule          Code = "policy_command_rule"
	PolicyPathRule             Code = "policy_path_rule"
	PolicyDomainRule           Code = "policy_domain_rule"
	PolicyDefaultDeny          Code = "policy_default_deny"
	PolicyRequiresApproval     Code = "policy_requires_approval"

	// Tripwire (docs/design/checks.md#tripwire).
	CmdUnparseable       Code = "cmd_unparseable"
	CmdTooComplex        Code = "cmd_too_complex"
	CmdBannedProgram     Code = "cmd_banned_program"
	CmdEnvOverride       Code = "cmd_env_override"
	CmdBannedArgs        Code = "cmd_banned_args"
	CmdNotAllowlisted    Code = "cmd_not_allowlisted"
	CmdDynamicProgram    Code = "cmd_dynamic_program"
	CmdInterpreterStdin  Code = "cmd_interpreter_stdin"
	CmdDownloadExec      Code = "cmd_download_exec"
	CmdRecursiveFunction Code = "cmd_recursive_function"
	RedirectDynamic      Code = "redirect_dynamic"
	RedirectWriteDenied  Code = "redirect_write_denied"
	PathInvalid          Code = "path_invalid"
	PathTraversal        Code = "path_traversal"
	PathUnresolvable     Code = "path_unresolvable"
	PathOutsideRoots     Code = "path_outside_roots"
	// PathProtected is an IronVise addition: the path is, or lies inside,
	// one that no command may see (the data directory, a credential store,
	// a protected_paths entry; package secretpaths).
	PathProtected Code = "path_protected"
	// PathWriteSensitive is an IronVise addition: write_file names a file
	// that another program runs or that configures a gate (a shell
	// startup file, git's hooks and config, a CI pipeline, an agent's
	// hook settings), so writing it is running code later.
	PathWriteSensitive   Code = "path_write_sensitive"
	URLInvalid           Code = "url_invalid"
	URLScheme            Code = "url_scheme"
	URLUserinfo          Code = "url_userinfo"
	URLIPLiteral         Code = "url_ip_literal"
	URLDomainNotAllowed  Code = "url_domain_not_allowed"
	URLUnresolvable      Code = "url_unresolvable"
	URLResolvedIPBlocked Code = "url_resolved_ip_blocked"
	URLRedirectBlocked   Code = "url_redirect_blocked"

	// Approval (docs/design/checks.md#approval-gates).
	ApprovalGranted  Code = "approval_granted"
	ApprovalRejected Code = "approval_rejected"
	ApprovalTimeout  Code = "approval_timeout"

	// Guard (docs/design/checks.md#guard-protocol).
	GuardAllow         Code = "guard_allow"
	GuardDeny          Code = "guard_deny"
	GuardUnparseable   Code = "guard_unparseable"
	GuardTimeout       Code = "guard_timeout"
	GuardProtocolError Code = "guard_protocol_error"
	GuardUnavailable   Code = "guard_unavailable"
	GuardBackendError  Code = "guard_backend_error"
	GuardDisabled      Code = "guard_disabled"
	// GuardNotConfigured is an IronVise addition: no guard reviewed the
	// intent because none is configured while GUARD_REQUIRED is unset (so
	// the guard is required). It is a skip, or a deny when the caller
	// asked for a guard (`ironvise check --require-guard`, an explicit
	// GUARD_REQUIRED=true), so that a pre-execution hook can tell that no
	// guard ran.
	GuardNotConfigured Code = "guard_not_configured"

	// Prompt scan (docs/design/checks.md#prompt-scan).
	PromptTooLong         Code = "prompt_too_long"
	PromptInjectionPhrase Code = "prompt_injection_phrase"
	PromptEncodedPayload  Code = "prompt_encoded_payload"
	PromptEncodedBinary   Code = "prompt_encoded_binary"
	PromptFlagged         Code = "prompt_flagged"

	// Session halts (docs/design/checks.md#reason-codes,
	// docs/design/agent.md#agent-loop).
	HaltCheckDenials     Code = "halt_check_denials"
	HaltGuardDenials     Code = "halt_guard_denials"
	HaltLLMErrors        Code = "halt_llm_errors"
	HaltObservationAbort Code = "halt_observation_abort"
	HaltMaxSteps         Code = "halt_max_steps"
	HaltTokenBudget      Code = "halt_token_budget"
	HaltGoalMismatch     Code = "halt_goal_mismatch"
	HaltLoopDetected     Code = "halt_loop_detected"
	HaltInterrupted      Code = "halt_interrupted"

	// CheckInternalError is an IronVise addition: a check that failed in a way
	// no other reason code names (a recovered panic, an injected resolver error
	// with no better code) denies with it, so the pipeline still fails closed.
	CheckInternalError Code = "check_internal_error"
)
