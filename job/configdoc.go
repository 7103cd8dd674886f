package job

import (
	"github.com/shardjob/shardjob/job/internal/configcheck"
	"github.com/shardjob/shardjob/job/internal/configdoc"
)

// The config document stored in a job's config node: Encode and the YAML
// it writes (marshalDoc: configFields, by job/internal/configdoc), the part
// after the name line encoded once for jobs that differ only in their
// names.

// Encode returns the YAML document stored in the job's config
// node. Every key is written, zero values included (but for a timeout of
// 0, left out so that instances that predate the key read the document),
// so the document is complete for other readers; defaults are not filled
// in, so DecodeConfig gives back exactly c. The keys are those of DecodeConfig, with
// Unmonitored written as monitorExecution: !Unmonitored and durations as Go
// duration strings ("5s"). An invalid c is refused with Validate's error.
func (c Config) Encode() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.marshal()
}

// marshal writes the document Encode returns, without validating c.
// Registering thousands of jobs that differ only in their names encodes
// the rest of the document once (docTails): the encoder is most of the
// client's CPU for registering a new job.
func (c Config) marshal() ([]byte, error) {
	if !configcheck.ValidName(c.Name) {
		return c.marshalDoc(), nil
	}
	key := c
	key.Name = ""
	return docTails.Document(c.Name, key, func(name string) []byte {
		d := key
		d.Name = name
		return d.marshalDoc()
	}), nil
}

// docTails are the documents' parts after the name line, for the latest
// config encoded.
var docTails configdoc.Tails[Config]

// marshalDoc encodes the whole document: every key in configFields'
// order, those marked optional left out when unset.
func (c Config) marshalDoc() []byte { return configdoc.Encode(&c, configFields) }
