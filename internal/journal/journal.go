// Package journal is an append-only file of received frames, written
// before they are acknowledged and replayed after a crash: what was
// acknowledged but not yet processed when the process died is handed back
// by the next Open.
//
// # Durability
//
// Append returns once its record is in the kernel's page cache: copied into
// the file's shared memory mapping (unix), or handed over in one pwrite(2)
// where there is no mapping. From then on it survives the death of the
// process (kill -9, panic, OOM), but not an operating-system crash or
// power cut, which may lose the last records written (the file is not
// synced). That is the guarantee of the SQLite store next to it (WAL with
// synchronous=NORMAL): a journal that synced every record would buy
// nothing the database keeps.
//
// The mapping is there for the ack's sake: Append runs on the Socket Mode
// reader's path before each ack, and a copy into the mapping takes no
// system call (the measurements: commit 607817c).
//
// # Format
//
// The file is a sequence of records, each a 17-byte header and its data:
//
//	length uint32   (of data, little-endian)
//	crc    uint32   (CRC-32C of seq, kind and data)
//	seq    uint64
//	kind   uint8    (1: an entry, 2: the entry seq is done)
//	data   [length]byte
//
// A record that is short or whose checksum does not match ends the file:
// Open cuts it and everything after it off (a write torn by a crash can
// only be the last one) and reports how many bytes it cut (Cut).
//
// A header of 17 zero bytes ends the records too (no record has seq 0),
// and what follows it is not read. A mapped journal keeps its file longer
// than its records: it writes a zero header after each record before the
// record itself, and starts over from the front by writing one there, so
// what follows the records is zero room or records of before a restart.
//
// # Size
//
// Done appends a done record. When no entry is outstanding and the records
// are over sizeBound, the journal starts over: a file written with pwrite
// is truncated, a mapped one gets a zero header at the front and keeps
// its pages in the page cache. Past compactBound, when the outstanding
// entries take less than a quarter of the records, they are copied to a
// new file that replaces it (rename), so one entry that is never done
// cannot make the file grow without end. The two bounds are apart so that
// under a stream of clicks, where a few are in flight at most moments,
// the cheap start-over happens at the first moment none is, and the
// compaction (a new file, and page faults in its fresh mapping) only when
// entries stay outstanding.
//
// # One process
//
// Open takes an exclusive flock on the file (kept across the compaction's
// rename: the new file is locked before it replaces the old): a second
// Journal on the same file, in this process or another, is refused with
// ErrLocked. The kernel drops the lock when the process dies.
package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/slackask/slackask/internal/flock"
)

const (
	headerLen = 17
	kindEntry = 1
	kindDone  = 2
	// maxData bounds one entry's data; a header claiming more is corrupt.
	maxData = 64 << 20
	// sizeBound is the size of the records past which Done starts over
	// when the last outstanding entry is done; compactBound the size past
	// which it compacts (see Size in the package doc).
	sizeBound    = 4 << 20
	compactBound = 2 * sizeBound
	// minRoom is the least length of a mapped file: records up to
	// compactBound fit without growing the mapping.
	minRoom = compactBound + sizeBound
	// warmAhead is how far past the records Done readies the mapping's
	// pages (see warm): the Appends of the clicks in flight until the
	// next Done.
	warmAhead = 64 << 10
)

// ErrLocked: another Journal, in this process or another, has the file open.
var ErrLocked = errors.New("the journal file is in use by another process")

// ErrClosed: the Journal was closed.
var ErrClosed = errors.New("journal: closed")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is one appended frame that was not marked done.
type Entry struct {
	Seq  uint64
	Data []byte
}

// span is where an outstanding entry's record sits in the file.
type span struct{ off, n int64 }

// Journal is an open journal file. Its methods are safe for concurrent use.
type Journal struct {
	path string

	mu sync.Mutex
	f  *os.File // nil once closed
	// m is the file mapped shared, read-write (unix), nil where it is
	// written with pwrite(2). Mapped, the file is len(m) bytes: the
	// records, then a zero header (unless the records fill it).
	m           []byte
	size        int64  // bytes of records, from the start of the file
	next        uint64 // the next entry's seq
	outstanding map[uint64]span
	live        int64  // bytes of the outstanding entries' records
	buf         []byte // the record being written (under mu)

	cut       int64
	cutReason string
}

// Open opens the journal at path, creating it if needed, and returns the
// entries appended and not marked done, in the order they were appended.
// A torn or corrupt tail is cut off (see Cut). It returns an error
// matching ErrLocked when another Journal has the file open.
func Open(path string) (*Journal, []Entry, error) {
	op := "journal open " + path
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := lock(f); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("%s: read: %w", op, err)
	}
	j := &Journal{path: path, f: f, next: 1, outstanding: map[uint64]span{}}
	entries, good, reason := j.scan(data)
	if good < int64(len(data)) {
		// A torn tail, or the zero room of a mapped file.
		if err := f.Truncate(good); err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%s: cut the file to its records: %w", op, err)
		}
		if reason != "" {
			j.cut, j.cutReason = int64(len(data))-good, reason
		}
	}
	j.size = good
	// Without a mapping (not unix, or the mapping failed) the journal is
	// written with pwrite(2): slower, and as durable.
	_ = j.mapRoom(good)
	j.warm()
	return j, entries, nil
}

// scan parses data and returns the outstanding entries in seq order, the
// length of its valid prefix and, when that is short of data, why.
func (j *Journal) scan(data []byte) (entries []Entry, good int64, reason string) {
	byseq := map[uint64][]byte{}
	var off int64
	for off < int64(len(data)) {
		rest := data[off:]
		if zero(rest[:min(len(rest), headerLen)]) {
			break // the end of the records
		}
		if len(rest) < headerLen {
			reason = fmt.Sprintf("short header at offset %d (%d bytes)", off, len(rest))
			break
		}
		n := binary.LittleEndian.Uint32(rest[0:4])
		sum := binary.LittleEndian.Uint32(rest[4:8])
		seq := binary.LittleEndian.Uint64(rest[8:16])
		kind := rest[16]
		if n > maxData || int64(len(rest)) < headerLen+int64(n) {
			reason = fmt.Sprintf("short record at offset %d (%d bytes of data claimed, %d present)", off, n, len(rest)-headerLen)
			break
		}
		if crc32.Checksum(rest[8:headerLen+int(n)], castagnoli) != sum {
			reason = fmt.Sprintf("checksum mismatch at offset %d", off)
			break
		}
		switch kind {
		case kindEntry:
			byseq[seq] = rest[headerLen : headerLen+int(n)]
			j.outstanding[seq] = span{off, headerLen + int64(n)}
			j.live += headerLen + int64(n)
		case kindDone:
			if s, ok := j.outstanding[seq]; ok {
				delete(byseq, seq)
				delete(j.outstanding, seq)
				j.live -= s.n
			}
		default:
			reason = fmt.Sprintf("unknown record kind %d at offset %d", kind, off)
		}
		if reason != "" {
			break
		}
		j.next = max(j.next, seq+1)
		off += headerLen + int64(n)
	}
	for _, seq := range slices.Sorted(maps.Keys(byseq)) {
		entries = append(entries, Entry{Seq: seq, Data: slices.Clone(byseq[seq])})
	}
	return entries, off, reason
}

// Cut returns how many bytes of a torn or corrupt tail Open cut off, and
// why (0 and "" when none).
func (j *Journal) Cut() (bytes int64, reason string) { return j.cut, j.cutReason }

// Path returns the journal file's path.
func (j *Journal) Path() string { return j.path }

// zero reports whether b is all zero bytes.
func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// encode writes the record of seq, kind and data into dst, which is
// headerLen+len(data) long; the checksum goes last.
func encode(dst []byte, seq uint64, kind byte, data []byte) {
	binary.LittleEndian.PutUint32(dst[0:4], uint32(len(data)))
	binary.LittleEndian.PutUint64(dst[8:16], seq)
	dst[16] = kind
	copy(dst[headerLen:], data)
	binary.LittleEndian.PutUint32(dst[4:8], crc32.Checksum(dst[8:], castagnoli))
}

// write adds the record of seq, kind and data after the records (under
// j.mu): into the mapping, grown when it has no room left, or with one
// pwrite(2). A failed write leaves j.size where it was, so the next
// record overwrites whatever part of it got in: the file never holds a
// torn record in its middle.
//
// Into the mapping, the zero header that is to follow the record goes
// first: until the record is whole, the zero header already after the
// records (at j.size) ends them, or the record's checksum (written last)
// fails; either way a kill midway never lets Open read on into records
// left from before a start-over.
func (j *Journal) write(seq uint64, kind byte, data []byte) error {
	end := j.size + int64(headerLen+len(data))
	if j.m != nil && end+headerLen > int64(len(j.m)) {
		if err := j.mapRoom(end + headerLen); err != nil {
			// Unmapped, the file is its records: go on with pwrite.
			j.unmap()
		}
	}
	if j.m != nil {
		err := guarded(func() {
			clear(j.m[end : end+headerLen])
			encode(j.m[j.size:end], seq, kind, data)
		})
		if err != nil {
			return err
		}
		j.size = end
		return nil
	}
	j.buf = slices.Grow(j.buf[:0], int(end-j.size))[:end-j.size]
	encode(j.buf, seq, kind, data)
	if n, err := j.f.WriteAt(j.buf, j.size); err != nil {
		if n > 0 {
			_ = j.f.Truncate(j.size)
		}
		return err
	}
	j.size = end
	return nil
}

// guarded runs f, which writes to the mapping, and returns a memory
// fault in it as an error: a page of a mapped file that the file system
// cannot back (a full disk) faults on its first write, where write(2)
// would have returned ENOSPC.
func guarded(f func()) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("write to the mapped file faulted at %#x (is the disk full?): %v", fault.Addr(), r)
		}
	}()
	f()
	return nil
}

// mapRoom maps the file shared with room for at least need bytes of
// records (under j.mu): the file is grown with zeros to the mapping's
// length, at least minRoom and twice the last. On failure the file is
// left as its records, unmapped.
func (j *Journal) mapRoom(need int64) error {
	n := max(minRoom, need, 2*int64(len(j.m)))
	j.unmap()
	if err := j.f.Truncate(n); err != nil {
		_ = j.f.Truncate(j.size)
		return err
	}
	m, err := mapFile(j.f, int(n))
	if err != nil {
		_ = j.f.Truncate(j.size)
		return err
	}
	j.m = m
	return nil
}

// unmap drops the mapping, if any, and cuts the file to its records
// (under j.mu).
func (j *Journal) unmap() {
	if j.m == nil {
		return
	}
	_ = unmapFile(j.m)
	j.m = nil
	_ = j.f.Truncate(j.size)
}

// Append writes data as a new entry (into the mapping, or in one
// pwrite(2)) and returns its seq. Once it returns, the entry survives the
// death of the process.
func (j *Journal) Append(data []byte) (uint64, error) {
	if len(data) > maxData {
		return 0, fmt.Errorf("journal append: %d bytes, the limit is %d", len(data), maxData)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return 0, fmt.Errorf("journal append: %w", ErrClosed)
	}
	seq := j.next
	off := j.size
	if err := j.write(seq, kindEntry, data); err != nil {
		return 0, fmt.Errorf("journal append: %w", err)
	}
	j.next++
	n := int64(headerLen + len(data))
	j.outstanding[seq] = span{off, n}
	j.live += n
	return seq, nil
}

// Done marks entry seq processed: the next Open will not return it. A seq
// that is not outstanding (done already, or never appended) is an error.
// When nothing is outstanding and the file is over the size bound it is
// truncated; when the outstanding entries are under a quarter of it, it is
// compacted.
func (j *Journal) Done(seq uint64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("journal done %d: %w", seq, ErrClosed)
	}
	s, ok := j.outstanding[seq]
	if !ok {
		return fmt.Errorf("journal done %d: not outstanding", seq)
	}
	if len(j.outstanding) == 1 && j.size > sizeBound {
		// The last one: nothing in the file is needed any more, and an
		// empty file needs no done record. A mapping starts over behind a
		// zero header at the front (see write).
		if j.m != nil {
			if err := guarded(func() { clear(j.m[:headerLen]) }); err != nil {
				return fmt.Errorf("journal done %d: start over: %w", seq, err)
			}
		} else if err := j.f.Truncate(0); err != nil {
			return fmt.Errorf("journal done %d: truncate: %w", seq, err)
		}
		delete(j.outstanding, seq)
		j.size, j.live = 0, 0
		j.warm()
		return nil
	}
	if err := j.write(seq, kindDone, nil); err != nil {
		return fmt.Errorf("journal done %d: %w", seq, err)
	}
	delete(j.outstanding, seq)
	j.live -= s.n
	if j.size > compactBound && j.live*4 < j.size {
		if err := j.compact(); err != nil {
			return fmt.Errorf("journal done %d: %w", seq, err)
		}
	}
	j.warm()
	return nil
}

// warm writes a zero byte into each page of the mapping from the end of
// the records up to warmAhead past it (under j.mu). A mapped page faults
// on its first write when fresh, and again after the kernel wrote it back
// (it is write-protected to see the next change); the file system's work
// for that fault would otherwise land in the next Appends, on the ack's
// path. Done runs after the ack, so the faults are taken here. From j.size
// on, the file holds the zero header that ends the records, then room or
// records of before a start-over, none of which Open reads: a zero
// written there changes nothing.
func (j *Journal) warm() {
	if j.m == nil {
		return
	}
	end := min(int64(len(j.m)), j.size+warmAhead)
	page := int64(os.Getpagesize())
	// A fault here is a full disk: the next Append reports it.
	_ = guarded(func() {
		for off := j.size; off < end; off = (off + page) &^ (page - 1) {
			j.m[off] = 0
		}
	})
}

// compact replaces the file with one holding only the outstanding
// entries' records (under j.mu). The new file is written and locked
// before the rename, so a crash leaves the old file or the new one, whole,
// and no other process can take the lock in between.
func (j *Journal) compact() error {
	seqs := slices.Sorted(maps.Keys(j.outstanding))
	buf := make([]byte, 0, j.live)
	spans := make(map[uint64]span, len(seqs))
	for _, seq := range seqs {
		s := j.outstanding[seq]
		buf = slices.Grow(buf, int(s.n))
		rec := buf[len(buf) : len(buf)+int(s.n)]
		if j.m != nil {
			copy(rec, j.m[s.off:s.off+s.n])
		} else if _, err := j.f.ReadAt(rec, s.off); err != nil {
			return fmt.Errorf("compact: read entry %d: %w", seq, err)
		}
		spans[seq] = span{int64(len(buf)), s.n}
		buf = buf[:len(buf)+int(s.n)]
	}
	tmp := j.path + ".compact"
	_ = os.Remove(tmp)
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	fail := func(err error) error {
		_ = nf.Close()
		_ = os.Remove(tmp)
		return fmt.Errorf("compact: %w", err)
	}
	if err := lock(nf); err != nil {
		return fail(err)
	}
	if _, err := nf.Write(buf); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	if j.m != nil {
		_ = unmapFile(j.m) // the old file is gone: nothing to cut
		j.m = nil
	}
	_ = j.f.Close()
	j.f, j.size, j.outstanding = nf, int64(len(buf)), spans
	_ = j.mapRoom(j.size) // unmapped, it goes on with pwrite
	return nil
}

// Outstanding returns how many entries are appended and not done.
func (j *Journal) Outstanding() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.outstanding)
}

// Size returns the bytes of records in the file (a mapped file is longer
// by its zero room until Close).
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Close closes the file and releases its lock; the entries not done stay
// for the next Open. Later calls of the other methods fail with ErrClosed.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	j.unmap() // the file is left as its records
	err := j.f.Close()
	j.f = nil
	if err != nil {
		return fmt.Errorf("journal close %s: %w", filepath.Base(j.path), err)
	}
	return nil
}

// lock takes the journal's flock on f (internal/flock): a file another
// Journal holds fails with ErrLocked.
func lock(f *os.File) error {
	if err := flock.Lock(f); err != nil {
		if errors.Is(err, flock.ErrHeld) {
			return fmt.Errorf("%w (flock on %s); it belongs to the process that has the SQLite database next to it", ErrLocked, f.Name())
		}
		return err
	}
	return nil
}
