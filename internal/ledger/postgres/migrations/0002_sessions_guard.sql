-- The session row's shown fields are evidence too (issue 23 item 1): what
-- the genesis event anchors never changes, status and finished_at change
-- once (running -> terminal), sealed_at is set once, and a row is never
-- deleted. Only the lease columns (owner_id, lease_until) stay mutable.
-- Verification checks the same fields against the signed events, so an
-- owner who disables this trigger is still caught (ledger.md §7).
CREATE FUNCTION ironvise_sessions_bound() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP <> 'UPDATE' THEN
		RAISE EXCEPTION 'ironvise: sessions are append-only (% rejected)', TG_OP;
	END IF;
	IF NEW.id IS DISTINCT FROM OLD.id OR NEW.goal IS DISTINCT FROM OLD.goal OR NEW.goal_hash IS DISTINCT FROM OLD.goal_hash
		OR NEW.policy_hash IS DISTINCT FROM OLD.policy_hash OR NEW.created_at IS DISTINCT FROM OLD.created_at
		OR NEW.llm_backend IS DISTINCT FROM OLD.llm_backend OR NEW.llm_model IS DISTINCT FROM OLD.llm_model
		OR NEW.sandbox_tier IS DISTINCT FROM OLD.sandbox_tier OR NEW.public_key IS DISTINCT FROM OLD.public_key
		OR NEW.did IS DISTINCT FROM OLD.did OR NEW.agent_loop IS DISTINCT FROM OLD.agent_loop
		OR (OLD.status <> 'running' AND NEW.status IS DISTINCT FROM OLD.status)
		OR (OLD.finished_at IS NOT NULL AND NEW.finished_at IS DISTINCT FROM OLD.finished_at)
		OR (OLD.sealed_at IS NOT NULL AND NEW.sealed_at IS DISTINCT FROM OLD.sealed_at) THEN
		RAISE EXCEPTION 'ironvise: session fields are append-only (only running -> terminal status, finished_at and sealed_at once, and the lease may change)';
	END IF;
	RETURN NEW;
END
$$;

CREATE TRIGGER sessions_bound BEFORE UPDATE OR DELETE ON sessions FOR EACH ROW EXECUTE FUNCTION ironvise_sessions_bound();
CREATE TRIGGER sessions_no_truncate BEFORE TRUNCATE ON sessions FOR EACH STATEMENT EXECUTE FUNCTION ironvise_sessions_bound();
