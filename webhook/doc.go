// Package webhook is the reusable part of slackask's callbacks: it signs a
// body the way design.md's "Reach" says, verifies such a signature, guards
// the addresses a callback may reach, makes one delivery attempt, and says
// when to try again. It keeps no state: the ask's record holds the
// delivery's state (attempts, the first attempt's time, the next one's) and
// the caller schedules the attempts, so delivery survives restarts.
//
// The signature is the contract with receivers:
//
//	X-Slackask-Request-Timestamp: <unix seconds>
//	X-Slackask-Signature: v1=hex(HMAC-SHA256(secret, "v1:" + timestamp + ":" + body))
//
// A caller's loop, one attempt at a time:
//
//	r := d.Deliver(ctx, url, ask.ID, secret, body)
//	switch r.Outcome {
//	case webhook.Delivered: // record it; never send again
//	case webhook.Permanent: // log r.Err; stop
//	case webhook.Retryable:
//		at, giveUp := r.RetryAt(webhook.DefaultSchedule, attempts, first, now)
//		// record at, or log and stop when giveUp
//	}
package webhook
