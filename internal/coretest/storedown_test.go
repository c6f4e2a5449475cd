package coretest_test

import (
	"errors"
	"testing"

	"github.com/floodgate/floodgate/core"
	"github.com/floodgate/floodgate/internal/coretest"
)

func TestStoreDown(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	lim := coretest.StoreDown(cause)
	_, err := lim.Allow(t.Context(), "k", 1)
	var se *core.StoreError
	if !errors.Is(err, core.ErrStore) || !errors.As(err, &se) || se.Op != "allow" || !errors.Is(err, cause) {
		t.Errorf("Allow: %v", err)
	}
	if err := lim.Refund(t.Context(), "k", 1); !errors.Is(err, core.ErrStore) || !errors.Is(err, cause) {
		t.Errorf("Refund: %v", err)
	}
}
