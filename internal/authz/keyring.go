package authz

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Keyring holds a handler's tokens, by their hashes. It is read-only once
// made and safe for concurrent use.
type Keyring struct {
	keys []key
}

type key struct {
	name string
	role Role
	sum  [sha256.Size]byte
}

// Principal is who sent a request: the name and role of its token.
type Principal struct {
	Name string
	Role Role
}

// NewKeyring returns a keyring of toks (checked by CheckTokens first).
func NewKeyring(toks []Token) *Keyring {
	k := &Keyring{}
	for _, t := range toks {
		k.keys = append(k.keys, key{name: t.Name, role: t.Role, sum: sha256.Sum256([]byte(t.Secret))})
	}
	return k
}

// Empty reports whether there are no tokens.
func (k *Keyring) Empty() bool { return len(k.keys) == 0 }

// Identify returns who r's "Authorization: Bearer <token>" stands for.
// sent reports whether r carries a bearer token at all; ok whether it is
// one of the keyring's. Every key is compared, in constant time, on the
// token's hash, so that neither the token's length nor which key matched
// shows in the time taken.
func (k *Keyring) Identify(r *http.Request) (p Principal, sent, ok bool) {
	got, sent := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	have := sha256.Sum256([]byte(strings.TrimSpace(got)))
	for _, key := range k.keys {
		if subtle.ConstantTimeCompare(key.sum[:], have[:]) == 1 {
			p, ok = Principal{Name: key.name, Role: key.role}, true
		}
	}
	return p, sent, ok && sent
}
