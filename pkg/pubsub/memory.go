package pubsub

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
)

// memoryBuffer bounds the messages waiting for one subscriber; a subscriber that falls
// further behind drops new ones (delivery is at most once).
const memoryBuffer = 4096

// Memory is the in-process driver: every PubSub from one Memory shares its subjects.
type Memory struct {
	mu     sync.Mutex
	subs   map[string][]*memSub
	groups map[string]map[string]*memGroup // subject → group → members
	closed bool
	inbox  atomic.Uint64
}

type memGroup struct {
	members []*memSub
	next    int
}

// NewMemory returns an empty in-process bus.
func NewMemory() *Memory {
	return &Memory{subs: map[string][]*memSub{}, groups: map[string]map[string]*memGroup{}}
}

type memSub struct {
	m       *Memory
	subject string
	group   string
	ch      chan Message
	once    sync.Once
	done    chan struct{}
}

func (m *Memory) Publish(ctx context.Context, subject string, data []byte) error {
	return m.deliver(subject, Message{Subject: subject, Data: clone(data)})
}

// deliver hands msg to the subscribers and one member of each group.
func (m *Memory) deliver(subject string, msg Message) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	targets := append([]*memSub(nil), m.subs[subject]...)
	for _, g := range m.groups[subject] {
		if len(g.members) > 0 {
			targets = append(targets, g.members[g.next%len(g.members)])
			g.next++
		}
	}
	m.mu.Unlock()
	for _, s := range targets {
		select {
		case s.ch <- msg:
		case <-s.done:
		default: // a subscriber this far behind drops the message
		}
	}
	return nil
}

func (m *Memory) Subscribe(ctx context.Context, subject string) (Subscription, error) {
	return m.subscribe(subject, "")
}

func (m *Memory) QueueSubscribe(ctx context.Context, subject, group string) (Subscription, error) {
	return m.subscribe(subject, group)
}

func (m *Memory) subscribe(subject, group string) (*memSub, error) {
	s := &memSub{m: m, subject: subject, group: group, ch: make(chan Message, memoryBuffer), done: make(chan struct{})}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if group == "" {
		m.subs[subject] = append(m.subs[subject], s)
		return s, nil
	}
	gs := m.groups[subject]
	if gs == nil {
		gs = map[string]*memGroup{}
		m.groups[subject] = gs
	}
	g := gs[group]
	if g == nil {
		g = &memGroup{}
		gs[group] = g
	}
	g.members = append(g.members, s)
	return s, nil
}

func (m *Memory) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	inbox := "_inbox." + strconv.FormatUint(m.inbox.Add(1), 10)
	reply, err := m.subscribe(inbox, "")
	if err != nil {
		return nil, err
	}
	defer reply.Unsubscribe()
	m.mu.Lock()
	n := len(m.subs[subject])
	for _, g := range m.groups[subject] {
		n += len(g.members)
	}
	m.mu.Unlock()
	if n == 0 {
		return nil, ErrNoResponders
	}
	var once atomic.Bool
	msg := Message{Subject: subject, Data: clone(data), respond: func(b []byte) error {
		if !once.CompareAndSwap(false, true) {
			return nil // only the first reply counts
		}
		return m.deliver(inbox, Message{Subject: inbox, Data: clone(b)})
	}}
	if err := m.deliver(subject, msg); err != nil {
		return nil, err
	}
	got, err := reply.Next(ctx)
	if err != nil {
		return nil, err
	}
	return got.Data, nil
}

func (m *Memory) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var all []*memSub
	for _, ss := range m.subs {
		all = append(all, ss...)
	}
	for _, gs := range m.groups {
		for _, g := range gs {
			all = append(all, g.members...)
		}
	}
	m.mu.Unlock()
	for _, s := range all {
		s.close()
	}
	return nil
}

func (s *memSub) Next(ctx context.Context) (Message, error) {
	select {
	case msg := <-s.ch:
		return msg, nil
	default:
	}
	select {
	case msg := <-s.ch:
		return msg, nil
	case <-s.done:
		return Message{}, ErrClosed
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

func (s *memSub) Unsubscribe() error {
	m := s.m
	m.mu.Lock()
	if s.group == "" {
		m.subs[s.subject] = remove(m.subs[s.subject], s)
		if len(m.subs[s.subject]) == 0 {
			delete(m.subs, s.subject)
		}
	} else if g := m.groups[s.subject][s.group]; g != nil {
		g.members = remove(g.members, s)
		if len(g.members) == 0 {
			delete(m.groups[s.subject], s.group)
			if len(m.groups[s.subject]) == 0 {
				delete(m.groups, s.subject)
			}
		}
	}
	m.mu.Unlock()
	s.close()
	return nil
}

func (s *memSub) close() { s.once.Do(func() { close(s.done) }) }

func remove(ss []*memSub, s *memSub) []*memSub {
	for i, x := range ss {
		if x == s {
			return append(ss[:i:i], ss[i+1:]...)
		}
	}
	return ss
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
