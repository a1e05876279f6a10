package bare

// Helpers for the compound types a schema builds from primitives: optional<T> and list<T>.
// They take the item's reader or writer as a function, so a method expression serves for
// primitives (bare.ReadOptional(r, (*bare.Reader).Str)) and a schema's own function for
// structs and unions.

// ReadOptional reads an optional<T>: nil if absent, else a pointer to the value read. After an
// error it returns nil.
func ReadOptional[T any](r *Reader, read func(*Reader) T) *T {
	if !r.Optional() {
		return nil
	}
	v := read(r)
	if r.err != nil {
		return nil
	}
	return &v
}

// WriteOptional writes an optional<T>: the tag, then *v when v is not nil.
func WriteOptional[T any](w *Writer, v *T, write func(*Writer, T)) {
	w.Optional(v != nil)
	if v != nil {
		write(w, *v)
	}
}

// OptData reads an optional<data>: nil if absent, a non-nil slice (empty for an empty value)
// if present, so that a round trip keeps the difference. The result aliases the input as
// with Data.
func (r *Reader) OptData() []byte {
	if !r.Optional() {
		return nil
	}
	return r.Data()
}

// OptData writes an optional<data>: absent for a nil slice, present for any other (even empty).
func (w *Writer) OptData(b []byte) {
	w.Optional(b != nil)
	if b != nil {
		w.Data(b)
	}
}

// FixedDataInto reads a data[len(dst)] into dst (no length prefix), for fixed-size ids held in
// arrays: r.FixedDataInto(id[:]). After an error dst is left unchanged.
func (r *Reader) FixedDataInto(dst []byte) {
	copy(dst, r.take(len(dst), "fixed data"))
}

// ReadList reads a list<T>: the count (bounded by the input as with ListLen), then each item
// with read, stopping at the first error. The result is never nil, so an empty list decodes
// to an empty slice.
func ReadList[T any](r *Reader, read func(*Reader) T) []T {
	n := r.ListLen()
	l := make([]T, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		l = append(l, read(r))
	}
	return l
}

// WriteList writes a list<T>: the count, then each item with write.
func WriteList[T any](w *Writer, l []T, write func(*Writer, T)) {
	w.ListLen(len(l))
	for _, v := range l {
		write(w, v)
	}
}
