module github.com/krad-ade/krad

go 1.26

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/spf13/pflag v1.1.0
)
