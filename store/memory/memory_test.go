package memory_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
	"github.com/slackask/slackask/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestAckRelay(t *testing.T) {
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	storetest.RunAckRelay(t, s, s)
}
