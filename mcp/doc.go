// Package mcp is slackask's Model Context Protocol front door: any
// MCP-speaking agent can ask a person a question in Slack and wait for the
// answer.
//
// The server offers one tool, ask_user_question. Its input is the
// user-interaction seam's request (questions with id, question, header,
// detail, options and multiSelect; multi_select is accepted too) plus
// optional channel, user and timeout. A call creates an ask through an
// [interaction.AskService], waits until it ends and returns the answer both
// as structured content and as the compact JSON text {"answers":[…]}. An ask
// that ends without an answer, or a request that cannot be asked, is a tool
// error whose text starts with the seam's error code (ASK_CANCELLED,
// ASK_TIMEOUT, ASK_ABORTED, INVALID_QUESTION, EMPTY_QUESTIONS, SLACK_ERROR…).
//
// While a call waits, the server sends progress notifications when the
// client asked for them (a progress token), so that clients with request
// timeouts keep waiting. A client that cancels the call
// (notifications/cancelled), closes its stdio session, deletes its HTTP
// session or drops the HTTP request carrying the call withdraws the ask: it
// ends as aborted and the Slack message says so. So does the end of the
// server (Options.Context, ServeStdio's ctx).
//
// [NewServer] builds the server, [Handler] serves it over streamable HTTP and
// [ServeStdio] over a pair of streams (slackask mcp).
package mcp
