package auth

import (
	"encoding/hex"
	"testing"
)

// TestFormatDNEdgeCases checks names no openssl -subj writes against what
// Java 17's X500Principal.getName() printed for the same DER (found with a
// small Java program when this test was written).
func TestFormatDNEdgeCases(t *testing.T) {
	tests := []struct{ name, der, want string }{
		{"BMPString, read as UTF-8 like Java", "30133111300f06035504031e080042004d01310050", "CN=\\00B\\00M\x011\\00P"},
		{"T61String byte past ASCII", "300f310d300b0603550403140454e93631", "CN=T\uFFFD61"},
		{"IA5String byte past ASCII", "300e310c300a0603550403160369e961", "CN=i\uFFFDa"},
		{"NUL", "300e310c300a06035504030c036e0075", `CN=n\00u`},
		{"only spaces", "300e310c300a06035504030c03202020", `CN=\ \ \ `},
		{"not a string", "300e310c300a060355040304036f6374", "CN=#04036f6374"},
		{"unknown attribute", "300c310a300806032a03040c0178", "1.2.3.4=#0c0178"},
		{"multi-valued RDN and carriage returns", "30263114300806035504031301613008060355040b130162310e300c06035504030c050d2078200d", "CN=\\\r\\ x\\ \\\r,CN=a+OU=b"},
		{"UniversalString", "300f310d300b06035504031c0400000055", "CN=#1c0400000055"},
		{"GeneralString", "300e310c300a06035504031b0367656e", "CN=gen"},
		{"invalid UTF-8", "300f310d300b06035504030c04626164ff", "CN=bad\uFFFD"},
		{"backslash and comma", "3010310e300c06035504030c05615c622c63", `CN=a\\b\,c`},
		{"empty", "3000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			der, err := hex.DecodeString(tt.der)
			if err != nil {
				t.Fatal(err)
			}
			got, err := formatDN(der)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("formatDN = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := formatDN([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("formatDN accepted truncated DER")
	}
}
