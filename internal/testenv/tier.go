package testenv

import (
	"os"
	"testing"
)

// The suite runs in two tiers. The CI tier (make test) proves each
// behaviour with the smallest data that proves it; the full tier (make
// test-full, DYNAFOLD_TEST_FULL=1) runs the same tests at the sizes that
// measure it under load, every design and engine, with a race-built CLI.

// Full reports whether the tests run in the full tier.
func Full() bool { return os.Getenv("DYNAFOLD_TEST_FULL") == "1" }

// Size is ci in the CI tier and full in the full tier: a test's data size,
// kill count or duration.
func Size(ci, full int) int {
	if Full() {
		return full
	}
	return ci
}

// FullTierOnly skips t in the CI tier, saying why the test is only in the
// full tier. It is for tests whose proof is their size or their breadth
// (a design the CI tier covers through another), never for tests that
// need a service: those fail when it is missing.
func FullTierOnly(t testing.TB, why string) {
	t.Helper()
	if !Full() {
		t.Skipf("full tier only (make test-full): %s", why)
	}
}
