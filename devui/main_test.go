package devui

import (
	"testing"

	"go.uber.org/goleak"
)

// The page's server and the tests' Socket Mode clients must leave no
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
