-- The session row's shown fields are evidence too (issue 23 item 1): what
-- the genesis event anchors never changes, status and finished_at change
-- once (running -> terminal), sealed_at is set once, and a row is never
-- deleted. Only the lease columns (owner_id, lease_until) stay mutable.
-- Verification checks the same fields against the signed events, so a
-- writer who drops this trigger is still caught (ledger.md §7).
CREATE TRIGGER sessions_bound BEFORE UPDATE ON sessions
WHEN NEW.id IS NOT OLD.id OR NEW.goal IS NOT OLD.goal OR NEW.goal_hash IS NOT OLD.goal_hash
	OR NEW.policy_hash IS NOT OLD.policy_hash OR NEW.created_at IS NOT OLD.created_at
	OR NEW.llm_backend IS NOT OLD.llm_backend OR NEW.llm_model IS NOT OLD.llm_model
	OR NEW.sandbox_tier IS NOT OLD.sandbox_tier OR NEW.public_key IS NOT OLD.public_key
	OR NEW.did IS NOT OLD.did OR NEW.agent_loop IS NOT OLD.agent_loop
	OR (OLD.status <> 'running' AND NEW.status IS NOT OLD.status)
	OR (OLD.finished_at IS NOT NULL AND NEW.finished_at IS NOT OLD.finished_at)
	OR (OLD.sealed_at IS NOT NULL AND NEW.sealed_at IS NOT OLD.sealed_at)
BEGIN SELECT RAISE(ABORT, 'ironvise: session fields are append-only (only running -> terminal status, finished_at and sealed_at once, and the lease may change)'); END;
CREATE TRIGGER sessions_no_delete BEFORE DELETE ON sessions
BEGIN SELECT RAISE(ABORT, 'ironvise: sessions are append-only (DELETE rejected)'); END;
