package action

// Windows has no O_NOFOLLOW; the path was resolved and re-checked just
// before the open.
const (
	oNoFollow = 0
	oNonBlock = 0
)
