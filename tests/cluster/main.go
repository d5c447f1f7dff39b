// vto-testcluster runs a real Kubernetes control plane on loopback for vto's demo and tests:
// an embedded etcd and the real kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver) in one process,
// on free ports, with RBAC authorisation, service-account token signing and self-signed certificates.
//
// Once /readyz answers it writes DIR/kubeconfig (cluster-admin, TLS verified against DIR/ca.crt, with
// the port it got) and prints "ready" on stdout. SIGTERM or SIGINT stops the API server and then etcd,
// and the process exits.
//
// Ports: a port found free can be taken by another process before the listener binds it. etcd's
// listeners are retried in-process on "address already in use"; the API server cannot be started
// twice in one process (its flags and metrics are global), so on a bind failure of a port it picked
// itself the program stops etcd and re-executes itself, which picks new ports.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"

	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	dir := flag.String("dir", "", "state directory: etcd data, certificates, kubeconfig (required)")
	port := flag.Int("port", 0, "API server port on 127.0.0.1 (0 picks a free one)")
	verbosity := flag.Int("v", 0, "API server log verbosity")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: vto-testcluster --dir DIR [--port N] [-v N]")
		os.Exit(2)
	}
	err := run(*dir, *port, *verbosity)
	if err != nil && *port == 0 && isAddressInUse(err) {
		reexecOnNewPorts(err)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vto-testcluster:", err)
		os.Exit(1)
	}
}

// How many times the process re-executes itself after losing a port it picked to another process.
const maxPortAttempts = 5

func isAddressInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}

// reexecOnNewPorts replaces the process with a fresh copy of itself (same pid, so the caller's pipe
// and "ready" line are unaffected), which picks new free ports. etcd has already stopped: run()
// returned.
func reexecOnNewPorts(cause error) {
	attempt, _ := strconv.Atoi(os.Getenv("VTO_TESTCLUSTER_PORT_ATTEMPT"))
	if attempt+1 >= maxPortAttempts {
		return
	}
	fmt.Fprintf(os.Stderr, "vto-testcluster: %v; retrying on new ports\n", cause)
	self, err := os.Executable()
	if err != nil {
		return
	}
	env := []string{"VTO_TESTCLUSTER_PORT_ATTEMPT=" + strconv.Itoa(attempt+1)}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VTO_TESTCLUSTER_PORT_ATTEMPT=") {
			env = append(env, kv)
		}
	}
	err = syscall.Exec(self, os.Args, env)
	fmt.Fprintln(os.Stderr, "vto-testcluster: re-exec failed:", err)
}

func run(dir string, apiPort, verbosity int) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return err
	}
	// A restart on the same directory keeps etcd's data and the certificates, so objects survive an
	// API server restart (the informer tests rely on that); only the kubeconfig is rewritten.
	_ = os.Remove(filepath.Join(dir, "kubeconfig"))
	if apiPort == 0 {
		if apiPort, err = freePort(); err != nil {
			return err
		}
	}
	pki, err := ensurePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}

	etcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer func() {
		etcd.Close()
		<-etcd.Server.StopNotify()
	}()

	server := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cmd := app.NewAPIServerCommand()
	cmd.SetArgs([]string{
		"--etcd-servers=http://" + etcd.Clients[0].Addr().String(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The endpoint reconciler refuses a loopback advertise address; nothing here needs the
		// "kubernetes" Service's endpoints, so it is off.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + filepath.Join(dir, "pki"),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pki.saPub,
		"--service-account-signing-key-file=" + pki.saKey,
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--profiling=false",
		"--shutdown-delay-duration=0s",
		"--shutdown-send-retry-after=false",
		"--v=" + strconv.Itoa(verbosity),
	})

	go func() {
		if err := waitReady(server, pki, 120*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "vto-testcluster: API server not ready:", err)
			return
		}
		if err := writeKubeconfig(filepath.Join(dir, "kubeconfig"), server, pki); err != nil {
			fmt.Fprintln(os.Stderr, "vto-testcluster: kubeconfig:", err)
			return
		}
		fmt.Println("ready")
	}()
	// NewAPIServerCommand installs its own SIGTERM/SIGINT handler: the first signal cancels the
	// server's context, Execute returns, and the deferred etcd shutdown runs. Open watches can hold
	// the API server's HTTP/2 shutdown for as long as their timeout (minutes); a test cluster has no
	// clients worth waiting for, so after a short grace it stops etcd and exits anyway.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		time.Sleep(shutdownGrace)
		// etcd has already applied every write the API server acknowledged; its files need no more.
		fmt.Fprintf(os.Stderr, "vto-testcluster: API server still draining after %s; exiting\n", shutdownGrace)
		os.Exit(0)
	}()
	return cmd.Execute()
}

// How long the API server may take to stop before the process exits regardless.
const shutdownGrace = 3 * time.Second

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startEtcd starts etcd on free ports, trying new ones when another process took one first.
func startEtcd(dataDir string) (*embed.Etcd, error) {
	var err error
	for attempt := 0; attempt < maxPortAttempts; attempt++ {
		var e *embed.Etcd
		if e, err = startEtcdOnFreePorts(dataDir); err == nil || !isAddressInUse(err) {
			return e, err
		}
	}
	return nil, err
}

func startEtcdOnFreePorts(dataDir string) (*embed.Etcd, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dataDir
	cfg.Name = "vto-testcluster"
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.Name + "=" + peerURL.String()
	// A restarted member on an existing data directory rejoins as itself.
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err == nil {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.LogLevel = zapcore.ErrorLevel.String()
	cfg.UnsafeNoFsync = true // a throwaway test cluster: durability across power loss is not needed
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("not ready after 60s")
	}
}

type pkiFiles struct {
	caCert, caKey           string
	servingCert, servingKey string
	adminCert, adminKey     string
	saKey, saPub            string
}

// ensurePKI creates a CA, the API server's serving certificate, a cluster-admin client certificate
// (group system:masters) and the service-account signing key pair, unless they exist already.
func ensurePKI(dir string) (pkiFiles, error) {
	f := pkiFiles{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	if _, err := os.Stat(f.saPub); err == nil {
		return f, nil
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vto-testcluster-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return f, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	if err := writePEM(f.caCert, "CERTIFICATE", caDER); err != nil {
		return f, err
	}
	if err := writeECKey(f.caKey, caKey); err != nil {
		return f, err
	}
	issue := func(certPath, keyPath string, serial int64, tmpl *x509.Certificate) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		if err := writePEM(certPath, "CERTIFICATE", der); err != nil {
			return err
		}
		return writeECKey(keyPath, key)
	}
	if err := issue(f.servingCert, f.servingKey, 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
	}); err != nil {
		return f, err
	}
	if err := issue(f.adminCert, f.adminKey, 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "vto-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return f, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return f, err
	}
	if err := writePEM(f.saKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey)); err != nil {
		return f, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return f, err
	}
	return f, writePEM(f.saPub, "PUBLIC KEY", pub)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func writeECKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}

// waitReady polls /readyz as the admin client, verifying the server against the cluster CA.
func waitReady(server string, f pkiFiles, timeout time.Duration) error {
	caPEM, err := os.ReadFile(f.caCert)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(f.adminCert, f.adminKey)
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		resp, err := client.Get(server + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz answered %d", resp.StatusCode)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("gave up after %s: %v", timeout, last)
}

func writeKubeconfig(path, server string, f pkiFiles) error {
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: vto-testcluster
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: vto-admin
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: vto-testcluster
  context: {cluster: vto-testcluster, user: vto-admin, namespace: default}
current-context: vto-testcluster
`, server, f.caCert, f.adminCert, f.adminKey)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(kc), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path) // atomic: a reader never sees half a kubeconfig
}
