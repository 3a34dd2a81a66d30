package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// closedPortURL returns the URL of a loopback port nobody listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestAskUnreachable: a server that cannot be reached is retried, saying
// so on stderr, and the command exits 1 once --timeout has passed.
func TestAskUnreachable(t *testing.T) {
	url := closedPortURL(t)
	t.Setenv("SLACKASK_URL", url)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	code := run(ctx, []string{"ask", "--question", "x", "--timeout", "2s"}, strings.NewReader(""), &stdout, &stderr)
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	// The bound is the --timeout, not the next pause of the backoff after
	// it: the margin is for a loaded machine, well below that pause.
	if took < 2*time.Second || took > 3*time.Second {
		t.Fatalf("gave up after %s, want about the --timeout of 2s", took)
	}
	msg := stderr.String()
	if !strings.Contains(msg, "cannot reach slackask at "+url+": retrying") || !strings.Contains(msg, "gave up after 2s") {
		t.Fatalf("stderr does not say what it tries:\n%s", msg)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q", stdout.String())
	}
}

// TestAskForeignServer: pointed at something that is not a slackask API
// (here the dev page's 404), `slackask ask` says so in one line, without
// the page, and stops at once.
func TestAskForeignServer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.NotFound(w, r)
	}))
	defer ts.Close()
	t.Setenv("SLACKASK_URL", ts.URL)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"ask", "--question", "x"}, strings.NewReader(""), &stdout, &stderr)
	want := "slackask ask: this is not a slackask API (HTTP 404 from " + ts.URL + "/v1/asks); is SLACKASK_URL right?\n"
	if code != 1 || stderr.String() != want || stdout.Len() != 0 {
		t.Fatalf("exit %d, stderr %q, want 1 and %q", code, stderr.String(), want)
	}
}

// TestAskUnresponsiveServer: a server that takes the connection but never
// answers is given up on at --timeout too, not when one request's own
// bound (client.CreateTimeout) ends.
func TestAskUnresponsiveServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-accepted
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	url := "http://" + ln.Addr().String()
	t.Setenv("SLACKASK_URL", url)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), []string{"ask", "--question", "x", "--timeout", "2s"}, strings.NewReader(""), &stdout, &stderr)
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
	}
	if took < 2*time.Second || took > 3*time.Second {
		t.Fatalf("gave up after %s, want about the --timeout of 2s; stderr:\n%s", took, stderr.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "cannot reach slackask at "+url+"; gave up after 2s") {
		t.Fatalf("stderr does not say it gave up:\n%s", msg)
	}
}

// answeringServer answers every POST /v1/asks at once with answer and
// records the request bodies.
func answeringServer(t *testing.T, answer interaction.Answer) (url string, bodies func() []string) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []string
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
		var in interaction.AskInput
		_ = json.Unmarshal(b, &in)
		ask := interaction.Ask{ID: "a1", Status: interaction.StatusAnswered, Questions: in.Questions, Answer: &answer}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(ask)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// TestAskFlags: --responders, --mention and --agent reach the request, and
// --print label prints the labels alone.
func TestAskFlags(t *testing.T) {
	ans := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "answer", Selected: []string{"Yes", "Maybe"}, Custom: ""}}}
	url, bodies := answeringServer(t, ans)
	t.Setenv("SLACKASK_URL", url)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"ask", "--question", "Deploy?", "--option", "Yes", "--option", "No",
		"--option", "Maybe", "--multi", "--responders", "U0AAA, S0BBB", "--mention", "U0CCC", "--agent", "ci:Deploy bot",
		"--print", "label"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
	if stdout.String() != "Yes\nMaybe\n" {
		t.Fatalf("stdout %q, want the labels one per line", stdout.String())
	}
	var in interaction.AskInput
	if err := json.Unmarshal([]byte(bodies()[0]), &in); err != nil {
		t.Fatal(err)
	}
	if strings.Join(in.Responders, ",") != "U0AAA,S0BBB" || strings.Join(in.Mention, ",") != "U0CCC" ||
		in.Agent == nil || in.Agent.ID != "ci" || in.Agent.Name != "Deploy bot" {
		t.Fatalf("request %+v (agent %+v)", in, in.Agent)
	}

	// Typed text comes on its own line; JSON stays the default.
	url2, _ := answeringServer(t, interaction.Answer{Answers: []interaction.AnswerItem{{ID: "answer", Custom: "next week"}}})
	t.Setenv("SLACKASK_URL", url2)
	stdout.Reset()
	if code := run(context.Background(), []string{"ask", "--question", "When?", "--print", "label"}, strings.NewReader(""), &stdout, &stderr); code != 0 || stdout.String() != "next week\n" {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"ask", "--question", "When?"}, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), `{"answers":`) {
		t.Fatalf("exit %d, stdout %q", code, stdout.String())
	}
	if code := run(context.Background(), []string{"ask", "--question", "When?", "--print", "yaml"}, strings.NewReader(""), &stdout, &stderr); code != 2 {
		t.Fatalf("--print yaml: exit %d, want 2", code)
	}
}

// TestHelpExitsZero: every command's --help succeeds and says something;
// serve's lists the variables it reads with their defaults.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"serve", "ask", "mcp", "manifest", "dev", "version", "help"} {
		for _, flag := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{cmd, flag}, strings.NewReader(""), &stdout, &stderr)
			if code != 0 || stdout.Len()+stderr.Len() == 0 {
				t.Errorf("%s %s: exit %d, output %q %q", cmd, flag, code, stdout.String(), stderr.String())
			}
		}
	}
	var stdout bytes.Buffer
	run(context.Background(), []string{"serve", "--help"}, strings.NewReader(""), &stdout, io.Discard)
	for _, want := range []string{"SLACK_BOT_TOKEN", "SLACKASK_HTTP_ADDR", "(default " + config.DefaultHTTPAddr + ")",
		"(default " + config.DefaultDatabase + ")", "SLACKASK_RETENTION", "(default " + config.DefaultRetention.String() + ")"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("serve --help lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestFlagErrorsAreOneLine: a bad flag is one line naming it and where
// help is, not the usage between two copies of the error; --help goes to
// stdout in the same style for ask and manifest.
func TestFlagErrorsAreOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ask", "--responses", "abc", "--question", "x"}, "slackask ask: invalid value \"abc\" for flag -responses: responses \"abc\": want a number of people (1 or more) or \"all\"\nsee slackask ask --help\n"},
		{[]string{"ask", "--bogus"}, "slackask ask: flag provided but not defined: -bogus\nsee slackask ask --help\n"},
		{[]string{"ask", "--print", "yaml", "--question", "x"}, "slackask ask: --print \"yaml\": use json or label\nsee slackask ask --help\n"},
		{[]string{"manifest", "--bogus"}, "slackask manifest: flag provided but not defined: -bogus\nsee slackask manifest --help\n"},
		{[]string{"version", "--bogus"}, "slackask version: takes no arguments\nsee slackask version --help\n"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr); code != 2 || stderr.String() != tc.want || stdout.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"manifest", "--help"}, strings.NewReader(""), &stdout, io.Discard); code != 0 ||
		stdout.String() != "usage: slackask manifest [--name NAME] [--mode http --url URL]\n\nPrints the Slack app manifest (JSON) to create the app from: Socket Mode (or,\n"+
			"with --mode http, the request URLs of HTTP mode), interactivity and the bot\nscopes slackask needs.\n\nflags:\n"+
			"  --mode MODE  how Slack reaches slackask, MODE: socket (Socket Mode) or http (Slack POSTs to --url) (default socket)\n"+
			"  --name NAME  the NAME the app shows in Slack (default slackask)\n"+
			"  --url URL    with --mode http: slackask's public https URL (e.g. https://slackask.example.com)\n" {
		t.Errorf("manifest --help: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	run(context.Background(), []string{"ask", "--help"}, strings.NewReader(""), &stdout, io.Discard)
	for _, want := range []string{"  --responses value  ", "5 aborted (withdrawn: Ctrl-C", "  --print string  "} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("ask --help lacks %q:\n%s", want, stdout.String())
		}
	}
}

// TestServeHelpAligned: every variable's description starts in the same
// column, the longest names included.
func TestServeHelpAligned(t *testing.T) {
	var stdout bytes.Buffer
	run(context.Background(), []string{"serve", "--help"}, strings.NewReader(""), &stdout, io.Discard)
	col := -1
	for _, line := range strings.Split(stdout.String(), "\n") {
		if !strings.HasPrefix(line, "  SLACK") {
			continue
		}
		name := strings.Fields(line)[0]
		at := strings.Index(line[2+len(name):], strings.Fields(line)[1]) + 2 + len(name)
		if col == -1 {
			col = at
		}
		if at != col || at < 2+len("SLACKASK_CALLBACK_ALLOW_PRIVATE")+2 {
			t.Errorf("description at column %d, want %d: %q", at, col, line)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &stdout, io.Discard); code != 0 ||
			stdout.String() != "slackask "+buildVersion()+"\n" || buildVersion() == "" {
			t.Errorf("%v: exit %d, %q", args, code, stdout.String())
		}
	}
	if v := buildVersion(); v != "devel" && !strings.HasPrefix(v, "v") {
		t.Errorf("version %q: want devel or a module version", v)
	}
}

// TestServeHelpListsEveryVariable: every variable of config.Config is in
// serve --help, but those only the client commands and dev read.
func TestServeHelpListsEveryVariable(t *testing.T) {
	var stdout bytes.Buffer
	run(context.Background(), []string{"serve", "--help"}, strings.NewReader(""), &stdout, io.Discard)
	notServe := map[string]bool{"SLACKASK_URL": true, "SLACKASK_DEV_ADDR": true}
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		name := ct.Field(i).Tag.Get("envconfig")
		if name != "" && !notServe[name] && !strings.Contains(stdout.String(), "  "+name+" ") {
			t.Errorf("serve --help does not list %s", name)
		}
	}
}

// askInputOf parses the flags of `slackask ask` and builds the request
// they send.
func askInputOf(t *testing.T, args ...string) (interaction.AskInput, error) {
	t.Helper()
	f, err := parseAskFlags(args, io.Discard)
	if err != nil {
		return interaction.AskInput{}, err
	}
	return f.input(strings.NewReader(""))
}

// TestAskTeamFlags: --responses, --veto, --on-timeout, --required,
// --optional, --other and --no-other shape the request; a question with
// options is required and has no Other… unless a flag says otherwise; a
// free-text question keeps Skip and its text field.
func TestAskTeamFlags(t *testing.T) {
	no, yes := false, true
	opts := []string{"--question", "Deploy?", "--option", "Yes", "--option", "No"}
	for _, tc := range []struct {
		name       string
		args       []string
		required   bool
		allowOther *bool
		vetoes     []bool
		responses  interaction.ResponseCount
		onTimeout  interaction.OnTimeout
	}{
		{"options: an approval by default", opts, true, &no, []bool{false, false}, interaction.ResponseCount{}, ""},
		{"free text keeps Skip and the text", []string{"--question", "Why?"}, false, nil, nil, interaction.ResponseCount{}, ""},
		{"--optional restores Skip", append(opts, "--optional"), false, &no, []bool{false, false}, interaction.ResponseCount{}, ""},
		{"--other restores Other…", append(opts, "--other"), true, nil, []bool{false, false}, interaction.ResponseCount{}, ""},
		{"--required=false", append(opts, "--required=false"), false, &no, []bool{false, false}, interaction.ResponseCount{}, ""},
		{"free text --required", []string{"--question", "Why?", "--required"}, true, nil, nil, interaction.ResponseCount{}, ""},
		{"2 of 3 with a veto", append(opts, "--veto", "No", "--responses", "2", "--responders", "U0A,U0B,U0C", "--on-timeout", "answer"),
			true, &no, []bool{false, true}, interaction.ResponseCount{N: 2}, interaction.OnTimeoutAnswer},
		{"all", append(opts, "--responses", "all", "--responders", "S0TEAM", "--on-timeout", "expire", "--no-other"),
			true, &no, []bool{false, false}, interaction.ResponseCount{All: true}, interaction.OnTimeoutExpire},
		{"--other=true --optional", append(opts, "--other=true", "--optional"), false, &yes, []bool{false, false}, interaction.ResponseCount{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := askInputOf(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			q := in.Questions[0]
			if q.Required != tc.required || q.OtherAllowed() != (tc.allowOther == nil || *tc.allowOther) {
				t.Errorf("required %v allowOther %v, want %v %v", q.Required, q.OtherAllowed(), tc.required, tc.allowOther == nil || *tc.allowOther)
			}
			var vetoes []bool
			for _, o := range q.Options {
				vetoes = append(vetoes, o.Veto)
			}
			if !reflect.DeepEqual(vetoes, tc.vetoes) {
				t.Errorf("vetoes %v, want %v", vetoes, tc.vetoes)
			}
			if in.Responses != tc.responses || in.OnTimeout != tc.onTimeout {
				t.Errorf("responses %+v onTimeout %q", in.Responses, in.OnTimeout)
			}
			if err := slackid.Check(in); err != nil {
				t.Errorf("the request is invalid: %v", err)
			}
		})
	}
	var help bytes.Buffer
	run(context.Background(), []string{"ask", "--help"}, strings.NewReader(""), &help, &help)
	for _, flag := range []string{"-responses", "-veto", "-on-timeout", "-required", "-optional", "-other", "-no-other", "required and has no Other…"} {
		if !strings.Contains(help.String(), flag) {
			t.Errorf("ask --help does not document %s", flag)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(opts, "--veto", "Maybe"), `--veto "Maybe"`},
		{append(opts, "--responses", "0"), "responses"},
		{append(opts, "--responses", "many"), "responses"},
		{append(opts, "--on-timeout", "later"), "on-timeout"},
		{append(opts, "--required", "--optional"), "contradicts"},
		{append(opts, "--no-other", "--other"), "contradicts"},
		{[]string{"--question", "Why?", "--no-other"}, "--no-other needs --option"},
	} {
		if _, err := askInputOf(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error about %s", tc.args, err, tc.want)
		}
	}
}

// TestAskJSONKeepsItsQuestions: --json requests keep their own required,
// allowOther and veto; explicit flags apply to each question, and --veto
// must name one of their options.
func TestAskJSONKeepsItsQuestions(t *testing.T) {
	body := `{"questions":[{"id":"go","question":"Deploy?","options":[{"label":"Yes"},{"label":"No"}]},{"id":"why","question":"Why?"}],"responses":2,"responders":["U0A","U0B"]}`
	parse := func(args ...string) interaction.AskInput {
		t.Helper()
		f, err := parseAskFlags(append([]string{"--json", "-"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		in, err := f.input(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	in := parse()
	for _, q := range in.Questions {
		if q.Required || !q.OtherAllowed() {
			t.Errorf("%s: required %v other %v: the JSON said neither", q.ID, q.Required, q.OtherAllowed())
		}
	}
	if in.Responses != (interaction.ResponseCount{N: 2}) {
		t.Errorf("responses %+v, want the JSON's 2", in.Responses)
	}
	in = parse("--required", "--veto", "No", "--responses", "3")
	if !in.Questions[0].Required || !in.Questions[1].Required || !in.Questions[0].Options[1].Veto || in.Questions[0].Options[0].Veto {
		t.Errorf("flags not applied: %+v", in.Questions)
	}
	if in.Responses != (interaction.ResponseCount{N: 3}) {
		t.Errorf("responses %+v, want the flag's 3", in.Responses)
	}
	f, err := parseAskFlags([]string{"--json", "-", "--veto", "Maybe"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.input(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), "Maybe") {
		t.Errorf("--veto Maybe on a JSON request: %v", err)
	}
}

// TestAskJSONExactNames: a --json request's names match as the API's do,
// exactly, with the one alias (multi_select).
func TestAskJSONExactNames(t *testing.T) {
	f, err := parseAskFlags([]string{"--json", "-"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"questions":[{"id":"a","question":"?"}],"TIMEOUT":"5m"}`:                        `TIMEOUT: unknown field (did you mean "timeout"?)`,
		`{"questions":[{"id":"a","question":"?","multiselect":true}]}`:                    `questions[0].multiselect: unknown field (did you mean "multiSelect"?)`,
		`{"questions":[{"id":"a","question":"?","options":[{"label":"x","Veto":true}]}]}`: `questions[0].options[0].Veto: unknown field (did you mean "veto"?)`,
	} {
		if _, err := f.input(strings.NewReader(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	in, err := f.input(strings.NewReader(`{"questions":[{"id":"a","question":"?","options":[{"label":"x"}],"multi_select":true}]}`))
	if err != nil || !in.Questions[0].MultiSelect {
		t.Errorf("multi_select: %v %+v", err, in.Questions)
	}
}

// TestAskTeamPrintLabel: a 2-of-3 approval sent with flags reaches the
// server as JSON (responses, veto, required, allowOther false), and
// --print label prints the team's chosen label(s), every tied one.
func TestAskTeamPrintLabel(t *testing.T) {
	team := interaction.Answer{Answers: []interaction.AnswerItem{{ID: "answer", Selected: []string{"Yes", "No"}}}}
	url, bodies := answeringServer(t, team)
	t.Setenv("SLACKASK_URL", url)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"ask", "--question", "Deploy?", "--option", "Yes", "--option", "No", "--veto", "No",
		"--responders", "U0AAA,U0BBB,U0CCC", "--responses", "2", "--print", "label"}, strings.NewReader(""), &stdout, &stderr)
	if code != 0 || stdout.String() != "Yes\nNo\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(bodies()[0]), &raw); err != nil {
		t.Fatal(err)
	}
	q := raw["questions"].([]any)[0].(map[string]any)
	if raw["responses"] != float64(2) || q["required"] != true || q["allowOther"] != false ||
		q["options"].([]any)[1].(map[string]any)["veto"] != true {
		t.Errorf("request body %s", bodies()[0])
	}
	if _, ok := raw["onTimeout"]; ok {
		t.Errorf("onTimeout sent without --on-timeout: %s", bodies()[0])
	}
}

// TestAskPrintsThePermalink: once the ask is created, `slackask ask` says
// on stderr where the question waits.
func TestAskPrintsThePermalink(t *testing.T) {
	const link = "https://example.slack.com/archives/C0ASKS/p1700000000000100"
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ask := interaction.Ask{ID: "a1", Status: interaction.StatusAnswered, Permalink: link,
			Answer: &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "answer", Selected: []string{"Yes"}}}}}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(ask)
	}))
	t.Cleanup(ts.Close)
	t.Setenv("SLACKASK_URL", ts.URL)
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"ask", "--question", "Deploy?", "--option", "Yes"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "waiting for an answer: "+link+"\n") {
		t.Fatalf("stderr %q", stderr.String())
	}
}

// TestAskOneTapFlags: --confirm, --note, --style, --display and --default
// shape the request; a label they name must be an option.
func TestAskOneTapFlags(t *testing.T) {
	in, err := askInputOf(t, "--question", "Deploy?", "--option", "Approve", "--option", "Reject", "--option", "a=b",
		"--confirm", "Approve", "--note", "Reject", "--note", "a=b=optional", "--style", "Approve=primary", "--style", "Reject=danger", "--display", "buttons")
	if err != nil {
		t.Fatal(err)
	}
	q := in.Questions[0]
	if q.Display != interaction.DisplayButtons || q.Options[0].Confirm == nil || q.Options[0].Style != "primary" ||
		q.Options[1].Note != "required" || q.Options[1].Style != "danger" || q.Options[2].Note != "optional" {
		t.Fatalf("%+v", q)
	}
	if err := slackid.Check(in); err != nil {
		t.Fatal(err)
	}
	in, err = askInputOf(t, "--question", "Commit message?", "--default", "fix: the race in Wait")
	if err != nil || in.Questions[0].Default != "fix: the race in Wait" {
		t.Fatalf("%+v %v", in.Questions, err)
	}
	for _, bad := range [][]string{
		{"--question", "Q?", "--option", "A", "--confirm", "B"},
		{"--question", "Q?", "--option", "A", "--note", "A=sometimes"},
		{"--question", "Q?", "--option", "A", "--style", "A=green"},
		{"--question", "Q?", "--option", "A", "--display", "tiles"},
	} {
		if _, err := askInputOf(t, bad...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
