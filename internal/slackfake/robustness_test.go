package slackfake

import (
	"net/url"
	"testing"
)

// FuzzValidate: no input makes the validators or the normaliser panic.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`[{"type":"section","text":{"type":"mrkdwn","text":"x"},"accessory":{"type":"static_select","options":"x","initial_option":5}}]`,
		`[{"type":"actions","elements":[{"type":"multi_static_select","option_groups":[{"label":1,"options":[null]}],"initial_options":{}}]}]`,
		`[{"type":"input","label":{"type":"plain_text","text":"l"},"element":[1]},{"type":"context","elements":[{"type":"image"}]}]`,
		`[{"type":"actions","elements":[{"type":"plain_text_input","max_length":"3"},{"type":"overflow","options":[1]},{"type":"checkboxes","options":[{}]}]}]`,
		`[null,1,"x",{"type":null},{"type":"section","fields":{}}]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := decodeJSON([]byte(raw))
		if err != nil {
			return
		}
		blocks, ok := asArr(v)
		if !ok {
			return
		}
		_ = validateMessageBlocks(blocks)
		_, _ = validateModal(map[string]any{"type": "modal", "blocks": v})
		st := initialState(normalizeBlocks(blocks))
		_ = st.rebase(blocks).wire()
		_, _ = findElement(blocks, selectKinds, ByText("x"), "select")
	})
}

func TestEphemeralInteraction(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, nil)
	_, body := rawCall(t, srv, "chat.postEphemeral", url.Values{"channel": {"C1"}, "user": {"U1"}, "text": {"t"},
		"blocks": {mustMarshal(t, []any{with(actions(button("ok", "OK")), "block_id", "e1")})}})
	ts, _ := body["message_ts"].(string)
	if _, err := srv.Person("U2").Click(testCtx(t), "C1", ts, nil); err == nil {
		t.Fatal("another person clicked an ephemeral message they cannot see")
	}
	if _, err := srv.Person("U1").Click(testCtx(t), "C1", ts, nil); err != nil {
		t.Fatal(err)
	}
	cb := b.next(t)
	if !cb.Container.IsEphemeral || cb.Container.MessageTs != ts || cb.ActionCallback.BlockActions[0].BlockID != "e1" {
		t.Fatalf("ephemeral block_actions %+v", cb.Container)
	}
	rawPost(t, cb.ResponseURL, "application/json", `{"replace_original":true,"text":"done"}`)
	if e := srv.Ephemerals("U1"); len(e) != 1 || e[0].Text != "done" {
		t.Fatalf("ephemeral after replace_original %+v", e)
	}
	rawPost(t, cb.ResponseURL, "application/json", `{"delete_original":true}`)
}
