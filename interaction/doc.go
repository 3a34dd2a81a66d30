// Package interaction holds slackask's domain: the user-interaction seam of
// deepseek-harness (questions, answers, coded errors), request validation,
// the ask resource served by the HTTP API, the AskService the front doors
// call (implemented by package asks), and Service, which holds the one
// active Provider for programs that embed slackask and ask through the seam.
//
// It imports only the standard library; every other package depends on it.
package interaction
