// Placeholder until the profile readers land: keeps the module's library target non-empty.
namespace stepcast::profile {}
