// Placeholder until calibration lands: keeps the module's library target non-empty.
namespace stepcast::calibrate {}
