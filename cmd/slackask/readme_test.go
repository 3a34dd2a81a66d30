package main

import (
	"os"
	"strings"
	"testing"

	"github.com/slackask/slackask/config"
)

// TestREADMEGetsANewUserStarted: what the README's first steps tell a new
// user to run matches the code (issue 16.7). The behaviours the text
// promises are tested where they live: the curl's reply is the ask
// resource with .answer and status (TestDevBrowser), a single question
// with options is answered by its pick alone (TestOneQuestionOneTap).
func TestREADMEGetsANewUserStarted(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(gomod), "\n")
	module, ok := strings.CutPrefix(first, "module ")
	if !ok {
		t.Fatalf("go.mod starts %q, not with its module line", first)
	}
	// Compared with runs of white space as one space: how a sentence is
	// wrapped does not matter.
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	text := norm(string(readme))
	for what, want := range map[string]string{
		"the go install line of this command": "go install " + module + "/cmd/slackask@latest",
		"the curl slackask dev prints":        devCurl(config.DefaultURL, false),
		"the page slackask dev opens":         "http://" + config.DefaultDevAddr,
		"where the answer is in the reply":    "the answer under `.answer` and `status`",
		"that one pick answers":               "the pick alone answers it",
	} {
		if !strings.Contains(text, norm(want)) {
			t.Errorf("README.md lacks %s: %s", what, want)
		}
	}
}
