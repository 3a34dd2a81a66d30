// Package chaos holds the chaos suite: TestChaos runs the real
// `slackask serve` binary as a child of a long-lived slackfake Server, on
// one SQLite database kept across restarts, while fake people answer asks
// that are created over the HTTP API. It kills the child with SIGKILL at
// random instants and at chosen ones (right after an ack, during start-up,
// between a Web API call being applied and its answer reaching the child,
// while an idempotent POST is in flight), cuts sockets and injects Web API
// faults, restarts the child on the same database, and then checks that
// nothing acknowledged was lost: every acknowledged answer is present and
// right, no ask ended twice, no message was posted twice for one ask or
// idempotency key, and every pending ask can still be answered.
//
// With SLACKASK_CHAOS_STORE=postgres it runs three replicas on a fresh
// schema of SLACKASK_TEST_DATABASE_URL's server instead, each behind a TCP
// proxy to PostgreSQL that resets, blackholes, delays or refuses its
// connections, with timers and callbacks in the workload (pg_test.go).
//
// The test skips unless SLACKASK_CHAOS=1 or SLACKASK_CHAOS_DURATION is set;
// SLACKASK_CHAOS_SEED replays a run's choices (the seed is printed).
package chaos
