package authtest_test

import (
	"os"
	"testing"

	"gregor/internal/auth/authtest"
)

func TestNewPKI(t *testing.T) {
	pki := authtest.NewPKI(t, t.TempDir(), "broker-1.example")
	for _, id := range []*authtest.Identity{pki.Server, pki.Client} {
		for _, f := range []string{id.Cert, id.Chain, id.Key, id.EncryptedKey, id.KeystorePEM, id.PKCS12} {
			if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if pki.Server.Subject != "CN=localhost" || pki.Client.Subject != "CN=client" || pki.CA.Subject != "CN=authtest CA" {
		t.Errorf("subjects %q %q %q", pki.Server.Subject, pki.Client.Subject, pki.CA.Subject)
	}
}
