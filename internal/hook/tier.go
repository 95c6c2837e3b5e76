package hook

import (
	"context"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// TierAgent is the sandbox tier a hook session records: the agent runs its
// own tools on its own machine, and IronVise runs nothing, in no sandbox.
const TierAgent sandbox.TierName = "agent"

// AgentTier is the tier of hook sessions. It never runs a command: a hook
// session's steps are delegated (agent.Session.Decide), so a Run reaching
// it is a bug, answered as an abort that ran nothing.
type AgentTier struct{}

// Name implements sandbox.Tier.
func (AgentTier) Name() sandbox.TierName { return TierAgent }

// Available implements sandbox.Tier.
func (AgentTier) Available(context.Context) error { return nil }

// SelfTest implements sandbox.Tier.
func (AgentTier) SelfTest(context.Context) error { return nil }

// Run implements sandbox.Tier: nothing runs.
func (AgentTier) Run(_ context.Context, _ sandbox.Request) sandbox.Result {
	return sandbox.Result{Tier: TierAgent, Status: sandbox.StatusAborted,
		Reason: "a hook session runs nothing: the agent runs its own tools"}
}
