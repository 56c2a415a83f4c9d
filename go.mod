module github.com/krad-ade/krad

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/spf13/pflag v1.1.0
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0
)
