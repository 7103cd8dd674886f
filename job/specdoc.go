package job

import "context"

// DecodeSpec decodes one job of a File from a document of its own: the
// keys of one entry of a job file's jobs: list (the Config's keys, plus
// handler, type, errorHandler and the type's section), decoded and
// validated exactly as Load decodes a file's job: strictly (an unknown key
// is ErrUnknownKey naming it, its line and the key probably meant), with
// every problem reported in one error whose entries wrap ErrInvalidConfig.
// The document's limits are DecodeConfig's (MaxDocumentBytes,
// MaxYAMLDepth, YAMLNodeBudget). The type's section and the error
// handler are returned undecoded, as in a File; package jobfile builds
// them. On error the Spec is the zero value.
func DecodeSpec(ctx context.Context, data []byte) (Spec, error) {
	root, perr := parseYAMLDocument(ctx, data, MaxDocumentBytes)
	if perr != nil {
		perr.place = "job"
		return Spec{}, joinConfigErrors([]error{perr})
	}
	if root == nil {
		return Spec{}, joinConfigErrors([]error{&configError{place: "job", subject: "document is empty"}})
	}
	var sp Spec
	if errs := sp.decodeNode(root, jobPlace); len(errs) > 0 {
		return Spec{}, joinConfigErrors(errs)
	}
	return sp, nil
}
