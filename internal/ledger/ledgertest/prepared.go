package ledgertest

import (
	"database/sql"
	"fmt"
)

// PreparedTamper returns a tamper function for DB.Unguard that runs its
// statements in one transaction on db, which must hold a single
// connection. The same few statements run thousands of times, so each is
// parsed once, before Begin (the transaction then holds the only
// connection). rebind turns the "?" placeholders into the database's
// (nil: unchanged); setup, when not empty, runs first in each transaction.
// closeAll closes the statements prepared so far.
func PreparedTamper(db *sql.DB, rebind func(string) string, setup string) (tamper func(stmts ...Stmt) error, closeAll func()) {
	prepared := map[string]*sql.Stmt{}
	closeAll = func() {
		for q, ps := range prepared {
			ps.Close()
			delete(prepared, q)
		}
	}
	tamper = func(stmts ...Stmt) error {
		for _, st := range stmts {
			if _, ok := prepared[st.Query]; ok {
				continue
			}
			q := st.Query
			if rebind != nil {
				q = rebind(q)
			}
			ps, err := db.Prepare(q)
			if err != nil {
				return fmt.Errorf("%s: %w", st.Query, err)
			}
			prepared[st.Query] = ps
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if setup != "" {
			if _, err := tx.Exec(setup); err != nil {
				return err
			}
		}
		for _, st := range stmts {
			if _, err := tx.Stmt(prepared[st.Query]).Exec(st.Args...); err != nil {
				return fmt.Errorf("%s: %w", st.Query, err)
			}
		}
		return tx.Commit()
	}
	return tamper, closeAll
}
