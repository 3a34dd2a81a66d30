package devui

import (
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slackask/slackask/internal/slackfake"
)

// page is everything the template draws for one person looking at one
// conversation.
type page struct {
	As       person
	People   []person
	Channels []navItem
	DMs      []navItem
	Channel  navItem
	Messages []message
	Thread   *thread
	Modal    *modal
	// Home: the Home entry of the sidebar; on the Home page (Channel.IsHome)
	// HomeView and HomeBlocks are the person's published Home tab.
	Home        navItem
	HomeViewID  string
	HomeBlocks  []Block
	Connected   bool
	Curl        string
	APIURL      string
	AppInitials string
	Query       string // as=…&c=… of this page, for the script
}

type person struct {
	ID, Name, Initials string
	Color              int
	Selected           bool
	Href               string // the conversation shown, as this person
}

type navItem struct {
	ID, Name string
	IsIM     bool
	IsHome   bool
	Active   bool
	Open     int // messages that still have controls; 0 for the channel shown, whose messages are in view
	Href     string
}

type message struct {
	Key                 string
	Channel, TS, Thread string
	Author, Initials    string
	Time, Stamp         string
	Blocks              []Block
	Fallback            template.HTML // the text, when there are no blocks
	Edited              bool
	Updates             int
	Ephemeral           bool
	Replies             int
	LastReply           string
	ThreadHref          string
	Open                bool // still has controls
	Highlight           bool // the message a permalink (?msg=TS) points at
}

type thread struct {
	Parent    message
	Replies   []message
	CloseHref string
}

type modal struct {
	ViewID               string
	Title, Submit, Close template.HTML
	Blocks               []Block
	Depth                int // views below it in the stack
}

// openCount counts the messages that still have controls: asks waiting
// for an answer.
func openCount(names Names, msgs []slackfake.Message) int {
	n := 0
	for _, m := range msgs {
		if bs, err := names.Blocks(m.Blocks, nil, nil); err == nil && HasActions(bs) {
			n++
		}
	}
	return n
}

// highlight marks the message ts (a permalink's ?msg=), in the channel or
// the open thread, and keeps it in the page's query so that the script's
// refreshes keep it marked.
func (p *page) highlight(ts string) {
	for i := range p.Messages {
		p.Messages[i].Highlight = p.Messages[i].TS == ts
	}
	if p.Thread != nil {
		p.Thread.Parent.Highlight = p.Thread.Parent.TS == ts
		for i := range p.Thread.Replies {
			p.Thread.Replies[i].Highlight = p.Thread.Replies[i].TS == ts
		}
	}
	p.Query += "&" + url.Values{"msg": {ts}}.Encode()
}

// build assembles the page for person as in channel c (thread: a parent ts
// or "").
func (u *UI) build(as, c, threadTS string) page {
	fake := u.fake
	names := u.names()
	var p page
	p.APIURL, p.Curl, p.AppInitials = u.opts.APIURL, u.opts.Curl, u.appInitials
	p.Connected = fake.Connections() > 0

	users := fake.Users()
	for _, usr := range users {
		if usr.IsBot {
			continue
		}
		p.People = append(p.People, person{ID: usr.ID, Name: usr.Name, Initials: initials(usr.Name), Color: color(usr.ID)})
	}
	if !slices.ContainsFunc(p.People, func(x person) bool { return x.ID == as }) {
		as = u.opts.User
		if !slices.ContainsFunc(p.People, func(x person) bool { return x.ID == as }) && len(p.People) > 0 {
			as = p.People[0].ID
		}
	}
	for i := range p.People {
		if p.People[i].ID == as {
			p.People[i].Selected = true
			p.As = p.People[i]
		}
	}

	var visible []slackfake.ChannelInfo
	for _, ch := range fake.Channels() {
		if ch.IsIM && ch.User != as {
			continue // someone else's DM
		}
		if !ch.IsIM && len(ch.Members) > 0 && !slices.Contains(ch.Members, as) {
			continue
		}
		visible = append(visible, ch)
	}
	if dm := slackfake.DMChannelID(as); as != "" && !slices.ContainsFunc(visible, func(x slackfake.ChannelInfo) bool { return x.ID == dm }) {
		visible = append(visible, slackfake.ChannelInfo{ID: dm, IsIM: true, User: as})
	}
	pick := func(id string) bool {
		return id == HomeID || slices.ContainsFunc(visible, func(x slackfake.ChannelInfo) bool { return x.ID == id })
	}
	if !pick(c) {
		c = u.opts.Channel
		if !pick(c) && len(visible) > 0 {
			c = visible[0].ID
		}
	}
	p.Query = query(as, c, "")
	// The People list switches who acts in the same conversation: each
	// person sees their own picks of the same ask (a Slack client keeps a
	// message's state per person).
	for i := range p.People {
		p.People[i].Href = "/?" + query(p.People[i].ID, c, "")
	}
	for _, ch := range visible {
		item := navItem{ID: ch.ID, Name: ch.Name, IsIM: ch.IsIM, Active: ch.ID == c, Href: "/?" + query(as, ch.ID, "")}
		if ch.IsIM {
			item.Name = u.opts.AppName
		}
		if !item.Active {
			item.Open = openCount(names, fake.Messages(ch.ID))
		}
		if item.Active {
			p.Channel = item
		}
		if ch.IsIM {
			p.DMs = append(p.DMs, item)
		} else {
			p.Channels = append(p.Channels, item)
		}
	}
	p.Home = navItem{ID: HomeID, Name: "Home", IsHome: true, Active: c == HomeID, Href: "/?" + query(as, HomeID, "")}
	if c == HomeID {
		p.Channel = navItem{ID: HomeID, Name: u.opts.AppName + " · Home", IsHome: true, Active: true}
		if h, ok := fake.Home(as); ok {
			st, _ := ParseState(h.State)
			p.HomeViewID = h.ID
			p.HomeBlocks, _ = names.Blocks(h.Blocks, st, nil)
		}
	}
	if p.Channel.ID == "" || p.Channel.IsHome {
		return p.withModal(u, names, as)
	}

	// Messages: top level with reply counts, then the person's ephemerals
	// in time order.
	who := fake.Person(as)
	all := fake.Messages(p.Channel.ID)
	replies := map[string][]slackfake.Message{}
	for _, m := range all {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			replies[m.ThreadTS] = append(replies[m.ThreadTS], m)
		}
	}
	for _, m := range all {
		if m.ThreadTS != "" && m.ThreadTS != m.TS {
			continue
		}
		mv := u.message(names, who, m)
		if rep := replies[m.TS]; len(rep) > 0 {
			mv.Replies = len(rep)
			mv.LastReply = tsTime(rep[len(rep)-1].TS, names.loc()).Format("15:04")
			mv.ThreadHref = "/?" + query(as, p.Channel.ID, m.TS)
		}
		p.Messages = append(p.Messages, mv)
		if m.TS == threadTS {
			th := &thread{Parent: mv, CloseHref: "/?" + p.Query}
			for _, r := range replies[m.TS] {
				th.Replies = append(th.Replies, u.message(names, who, r))
			}
			p.Thread = th
			p.Query = query(as, c, threadTS)
		}
	}
	for _, e := range fake.Ephemerals(as) {
		if e.Channel != p.Channel.ID {
			continue
		}
		mv := u.message(names, who, slackfake.Message{Channel: e.Channel, TS: e.TS, Text: e.Text, Blocks: e.Blocks})
		mv.Ephemeral, mv.Key = true, "eph:"+e.Channel+"/"+e.TS
		p.Messages = append(p.Messages, mv)
	}
	slices.SortStableFunc(p.Messages, func(a, b message) int { return compareTS(a.TS, b.TS) })
	return p.withModal(u, names, as)
}

// HomeID is the c= of the person's Home tab page.
const HomeID = "home"

// withModal adds the person's modal: the top of their stack.
func (p page) withModal(u *UI, names Names, as string) page {
	fake := u.fake
	if views := fake.OpenViews(as); len(views) > 0 {
		v := views[len(views)-1]
		st, _ := ParseState(v.State)
		errs := map[string]string{}
		for k, msg := range v.Errors {
			errs[k] = msg
		}
		for k, msg := range u.localErrors(v.ID) {
			errs[k] = msg
		}
		bs, _ := names.Blocks(v.Blocks, st, errs)
		p.Modal = &modal{
			ViewID: v.ID, Title: Plain(v.Title, true), Submit: Plain(v.Submit, true),
			Close: Plain(cmpOr(v.Close, "Cancel"), true), Blocks: bs, Depth: len(views) - 1,
		}
	}
	return p
}

// message converts a stored message as the person sees it.
func (u *UI) message(names Names, who *slackfake.Person, m slackfake.Message) message {
	st := State(nil)
	if raw, err := who.MessageState(m.Channel, m.TS); err == nil {
		st, _ = ParseState(raw)
	}
	bs, err := names.Blocks(m.Blocks, st, nil)
	mv := message{
		Key: "msg:" + m.Channel + "/" + m.TS, Channel: m.Channel, TS: m.TS, Thread: m.ThreadTS,
		Author: u.opts.AppName, Initials: u.appInitials,
		Blocks: bs, Edited: m.Updates > 0, Updates: m.Updates, Open: HasActions(bs),
	}
	if err != nil || len(bs) == 0 {
		mv.Fallback = names.Mrkdwn(m.Text)
	}
	t := tsTime(m.TS, names.loc())
	mv.Time, mv.Stamp = t.Format("15:04"), t.Format("Monday, January 2, 2006 at 15:04:05")
	return mv
}

func query(as, c, threadTS string) string {
	v := url.Values{}
	v.Set("as", as)
	v.Set("c", c)
	if threadTS != "" {
		v.Set("thread", threadTS)
	}
	return v.Encode()
}

// tsTime reads a message timestamp "1700000000.000100".
func tsTime(ts string, loc *time.Location) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	us, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, us*1000).In(loc)
}

func compareTS(a, b string) int {
	ta, tb := tsTime(a, time.UTC), tsTime(b, time.UTC)
	return ta.Compare(tb)
}

// initials returns up to two letters for an avatar.
func initials(name string) string {
	var out []rune
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r, _ := utf8.DecodeRuneInString(w)
		out = append(out, unicode.ToUpper(r))
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 1 {
		if rs := []rune(name); len(rs) > 1 && (unicode.IsLetter(rs[1]) || unicode.IsDigit(rs[1])) {
			out = append(out, unicode.ToLower(rs[1]))
		}
	}
	if len(out) == 0 {
		return "?"
	}
	return string(out)
}

// color picks one of 8 avatar colours for an id.
func color(id string) int {
	h := 0
	for _, r := range id {
		h = h*31 + int(r)
	}
	if h < 0 {
		h = -h
	}
	return h % 8
}
