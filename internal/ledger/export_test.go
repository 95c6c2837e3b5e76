package ledger

// SetBeforeRemember makes l call f before each write of its
// remembered-checkpoint file (remember_test.go).
func SetBeforeRemember(l *Ledger, f func()) { l.beforeRemember = f }
