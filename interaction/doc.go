// Package interaction holds slackask's domain: the user-interaction seam of
// deepseek-harness (questions, answers, coded errors), request validation,
// the ask resource served by the HTTP API, and the Service that routes asks to
// the one active Provider.
//
// It imports only the standard library; every other package depends on it.
package interaction
