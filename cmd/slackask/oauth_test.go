package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/sqlite"
)

var testEncryptionKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, 32))

func withOAuth() option {
	return withConfig(func(c *config.Config) {
		c.SlackClientID, c.SlackClientSecret, c.EncryptionKey = "fake-client-id", "fake-client-secret", testEncryptionKey
	})
}

// TestServeInstallsThroughOAuth: serve with SLACK_CLIENT_ID/SECRET mounts
// /slack/install and /slack/oauth_redirect; an install through Slack's
// (the fake's) pages stores the installation sealed: the database files
// read raw hold no token, and no log line holds a token or the client
// secret.
func TestServeInstallsThroughOAuth(t *testing.T) {
	h := start(t, httpMode(), withOAuth())
	h.fake.AddTeam("T0B", "Beta", "")
	h.fake.AddUserIn("T0B", "U0B", "bob")
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (*http.Response, string) {
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := get(h.base + "/slack/install")
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("/slack/install answered %d", resp.StatusCode)
	}
	back, err := h.fake.Approve(resp.Header.Get("Location"), slackfake.Approval{Team: "T0B"})
	if err != nil {
		t.Fatal(err)
	}
	resp, page := get(back)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "slackask keys create --name NAME --workspace T0B") {
		t.Fatalf("after install: %d\n%s", resp.StatusCode, page)
	}
	if resp, _ := get(back); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the redirect again answered %d, want 400", resp.StatusCode)
	}

	// The installation, read beside the running server.
	keys, err := sqlite.OpenKeys(ctxT(t), h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	sealer, err := h.cfg.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	in, err := installs.NewStored(keys, sealer, installs.StoredConfig{}).Lookup(ctxT(t), "", "T0B")
	if err != nil || !h.fake.TokenValid(in.BotToken) || in.BotUserID != h.fake.BotUserOf("T0B") {
		t.Fatalf("stored installation: team %q, valid %v, %v", in.Team, h.fake.TokenValid(in.BotToken), err)
	}
	files, _ := filepath.Glob(h.cfg.Database + "*")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(in.BotToken)) || bytes.Contains(raw, []byte("fake-client-secret")) {
			t.Errorf("%s holds the bot token or the client secret", filepath.Base(f))
		}
	}
	for _, secret := range []string{in.BotToken, "fake-client-secret", testEncryptionKey} {
		if strings.Contains(h.logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}

// TestInstallsRekey: `slackask installs rekey` seals every installation
// under the new key; `installs list` shows which key each is under and no
// token.
func TestInstallsRekey(t *testing.T) {
	ctx := ctxT(t)
	db := filepath.Join(t.TempDir(), "slackask.db")
	oldKey := bytes.Repeat([]byte{1}, 32)
	newKey := bytes.Repeat([]byte{2}, 32)
	keys, err := sqlite.OpenKeys(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	oldSealer, _ := installs.NewSealer(oldKey, nil)
	for _, team := range []string{"T1", "T2"} {
		if err := installs.NewStored(keys, oldSealer, installs.StoredConfig{}).Save(ctx, installs.Installation{Team: team, BotToken: "xoxb-secret-" + team}); err != nil {
			t.Fatal(err)
		}
	}
	keys.Close()
	t.Setenv("SLACKASK_DATABASE", db)
	t.Setenv("SLACKASK_ENCRYPTION_KEY", base64.StdEncoding.EncodeToString(newKey))
	t.Setenv("SLACKASK_ENCRYPTION_KEY_PREVIOUS", "")
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cmdInstalls(ctx, args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := run("rekey"); code != 2 || !strings.Contains(stderr, "SLACKASK_ENCRYPTION_KEY_PREVIOUS") {
		t.Fatalf("rekey without the previous key: %d %s", code, stderr)
	}
	code, out, _ := run("list")
	if code != 0 || strings.Count(out, "(not the current key: rekey)") != 2 || strings.Contains(out, "xoxb") {
		t.Fatalf("list before rekey: %d\n%s", code, out)
	}
	t.Setenv("SLACKASK_ENCRYPTION_KEY_PREVIOUS", base64.StdEncoding.EncodeToString(oldKey))
	if code, out, stderr := run("rekey"); code != 0 || !strings.Contains(out, "2 of 2 installations sealed again") {
		t.Fatalf("rekey: %d %s %s", code, out, stderr)
	}
	t.Setenv("SLACKASK_ENCRYPTION_KEY_PREVIOUS", "")
	if code, out, _ := run("list"); code != 0 || strings.Count(out, "(current)") != 2 {
		t.Fatalf("list after rekey: %d\n%s", code, out)
	}
	t.Setenv("SLACKASK_ENCRYPTION_KEY", "dG9vLXNob3J0")
	if code, _, stderr := run("list"); code != 2 || !strings.Contains(stderr, "SLACKASK_ENCRYPTION_KEY is 9 bytes, not 32") {
		t.Fatalf("a short key: %d %s", code, stderr)
	}
}

// TestServeRekeysAtStart: started with a new SLACKASK_ENCRYPTION_KEY and
// the old one in SLACKASK_ENCRYPTION_KEY_PREVIOUS, serve seals every
// installation again under the new key, so the old key can go.
func TestServeRekeysAtStart(t *testing.T) {
	ctx := ctxT(t)
	db := filepath.Join(t.TempDir(), "slackask.db")
	oldKey := bytes.Repeat([]byte{7}, 32)
	keys, err := sqlite.OpenKeys(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	oldSealer, _ := installs.NewSealer(oldKey, nil)
	if err := installs.NewStored(keys, oldSealer, installs.StoredConfig{}).Save(ctx, installs.Installation{Team: "T9", BotToken: "xoxb-old-sealed"}); err != nil {
		t.Fatal(err)
	}
	keys.Close()
	h := start(t, httpMode(), withOAuth(), withConfig(func(c *config.Config) {
		c.Database, c.EncryptionKeyPrevious = db, base64.StdEncoding.EncodeToString(oldKey)
	}))
	keys, err = sqlite.OpenKeys(ctx, h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	defer keys.Close()
	newOnly := h.cfg
	newOnly.EncryptionKeyPrevious = ""
	sealer, err := newOnly.Sealer()
	if err != nil {
		t.Fatal(err)
	}
	in, err := installs.NewStored(keys, sealer, installs.StoredConfig{}).Lookup(ctx, "", "T9")
	if err != nil || in.BotToken != "xoxb-old-sealed" {
		t.Fatalf("after serve started: %v; want the installation open under the new key alone", err)
	}
}
