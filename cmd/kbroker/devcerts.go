package main

import (
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/internal/atomicfile"
	"github.com/kbroker/kbroker/security/devca"
)

// devCertsCmd writes a development CA and certificates signed by it as
// KIP-651 PEM stores, and prints the matching broker and client settings.
// Run again on the same directory, it keeps the CA and issues fresh
// certificates (a rotation the brokers pick up without a restart).
func (a *app) devCertsCmd() *cobra.Command {
	var o devCertsOptions
	cmd := &cobra.Command{
		Use:   "dev-certs --dir DIR [--hosts localhost,127.0.0.1] [--brokers broker] [--clients admin]",
		Short: "Create a development CA with broker and client certificates (PEM stores)",
		Long: "Create (or reuse) a development certificate authority in DIR and issue\n" +
			"certificates signed by it, as KIP-651 PEM files:\n\n" +
			"  ca.pem                 the truststore (ssl.truststore.location)\n" +
			"  ca-key.pem             the CA key, kept to issue more certificates later\n" +
			"  <broker>.keystore.pem  key and chain of each broker (ssl.keystore.location)\n" +
			"  <client>.keystore.pem  key and chain of each client, and the same as\n" +
			"  <client>.cert.pem      <client>.key.pem for kcat and franz-go\n\n" +
			"Certificates name every --hosts entry (DNS names and IP addresses). Not for\n" +
			"production: keys are made on this machine and nothing can be revoked.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.devCerts(o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "certs", "directory to write the files to")
	f.StringSliceVar(&o.hosts, "hosts", []string{"localhost", "127.0.0.1"}, "host names and IP addresses the broker certificates are valid for")
	f.StringSliceVar(&o.brokers, "brokers", []string{"broker"}, "broker certificates to issue (common names)")
	f.StringSliceVar(&o.clients, "clients", []string{"admin"}, "client certificates to issue (common names; principal User:CN=<name>)")
	f.StringVar(&o.keyPassword, "key-password", "", "encrypt the keystores' keys with this ssl.key.password")
	f.DurationVar(&o.validity, "validity", 365*24*time.Hour, "how long the certificates are valid")
	return cmd
}

type devCertsOptions struct {
	dir                     string
	hosts, brokers, clients []string
	keyPassword             string
	validity                time.Duration
}

func (a *app) devCerts(o devCertsOptions) error {
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return err
	}
	ca, reused, err := loadOrMakeCA(o.dir, o.validity)
	if err != nil {
		return err
	}
	var dns []string
	var ips []net.IP
	for _, h := range o.hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	now := time.Now()
	for _, name := range o.brokers {
		leaf := devca.Leaf{Subject: pkix.Name{CommonName: name}, DNSNames: dns, IPs: ips, Server: true, Client: true, Validity: o.validity}
		if err := issue(ca, leaf, now, o, false); err != nil {
			return err
		}
	}
	for _, name := range o.clients {
		if err := issue(ca, devca.Leaf{Subject: pkix.Name{CommonName: name}, Client: true, Validity: o.validity}, now, o, true); err != nil {
			return err
		}
	}
	printDevCertSettings(a.stdout, o, reused)
	return nil
}

// loadOrMakeCA reuses dir's CA when it has one.
func loadOrMakeCA(dir string, validity time.Duration) (*devca.CA, bool, error) {
	certPEM, errC := os.ReadFile(filepath.Join(dir, "ca.pem"))
	keyPEM, errK := os.ReadFile(filepath.Join(dir, "ca-key.pem"))
	if errC == nil && errK == nil {
		ca, err := devca.LoadCA(certPEM, keyPEM, nil)
		return ca, true, err
	}
	if !errors.Is(errC, fs.ErrNotExist) && errC != nil {
		return nil, false, errC
	}
	ca, err := devca.NewCA("kbroker development CA", time.Now(), 10*validity, nil)
	if err != nil {
		return nil, false, err
	}
	if err := writeFiles(dir, map[string][]byte{"ca.pem": ca.CertPEM(), "ca-key.pem": ca.KeyPEM()}); err != nil {
		return nil, false, err
	}
	return ca, false, nil
}

func issue(ca *devca.CA, leaf devca.Leaf, now time.Time, o devCertsOptions, client bool) error {
	kp, err := ca.Issue(leaf, now)
	if err != nil {
		return err
	}
	ks, err := kp.KeystorePEM(o.keyPassword)
	if err != nil {
		return err
	}
	name := leaf.Subject.CommonName
	files := map[string][]byte{name + ".keystore.pem": ks}
	if client {
		files[name+".cert.pem"], files[name+".key.pem"] = kp.ChainPEM(), kp.KeyPEM()
	}
	return writeFiles(o.dir, files)
}

// writeFiles writes each file atomically (a broker reloading it never
// reads half of it), keys readable by the owner only.
func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func printDevCertSettings(w io.Writer, o devCertsOptions, reused bool) {
	dir, _ := filepath.Abs(o.dir)
	verb := "created a CA and issued"
	if reused {
		verb = "reused the CA and issued new"
	}
	fmt.Fprintf(w, "%s certificates in %s\n\n# server.properties (each broker: its own keystore)\n", verb, dir)
	fmt.Fprintf(w, "ssl.keystore.type=PEM\nssl.keystore.location=%s/%s.keystore.pem\n", dir, o.brokers[0])
	if o.keyPassword != "" {
		fmt.Fprintf(w, "ssl.key.password=<the --key-password>\n")
	}
	fmt.Fprintf(w, "ssl.truststore.type=PEM\nssl.truststore.location=%s/ca.pem\n", dir)
	fmt.Fprintf(w, "# mutual TLS: ssl.client.auth=required, and principals User:<common name>:\n")
	fmt.Fprintf(w, "ssl.principal.mapping.rules=RULE:^CN=([^,]+)$/$1/,DEFAULT\n\n")
	client := "admin"
	if len(o.clients) > 0 {
		client = o.clients[0]
	}
	fmt.Fprintf(w, "# kcat / librdkafka\n-X security.protocol=ssl -X ssl.ca.location=%s/ca.pem \\\n", dir)
	fmt.Fprintf(w, "  -X ssl.certificate.location=%s/%s.cert.pem -X ssl.key.location=%s/%s.key.pem\n\n", dir, client, dir, client)
	fmt.Fprintf(w, "# franz-go pkg/kgo test suite\nKGO_TEST_TLS=ca:%s/ca.pem,cert:%s/%s.cert.pem,key:%s/%s.key.pem\n",
		dir, dir, client, dir, client)
	if len(o.hosts) > 0 {
		fmt.Fprintf(w, "# the certificates name: %s\n", strings.Join(o.hosts, ", "))
	}
}
