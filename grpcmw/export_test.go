package grpcmw

// The status messages, for the tests of package grpcmw_test.
const (
	MessageDenied       = messageDenied
	MessageUnavailable  = messageUnavailable
	MessageBadKey       = messageBadKey
	MessageKey          = messageKey
	MessageCost         = messageCost
	MessageInvalidCost  = messageInvalidCost
	MessageCostTooLarge = messageCostTooLarge
	MessageInternal     = messageInternal
)
