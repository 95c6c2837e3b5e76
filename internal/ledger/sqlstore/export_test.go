package sqlstore

// PreparedCount is the number of statements the store holds prepared.
func (s *Store) PreparedCount() int {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return len(s.stmts)
}
