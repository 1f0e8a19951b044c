// A ChatML template that ends the prompt by opening the reasoning
// ("<think>\n"), as DeepSeek-R1's distills do, for the integration tests of
// the reasoning split (reasoning_api_test.cpp, reasoning_form_api_test.cpp).
#pragma once

namespace tc::test {

inline constexpr char kOpenedThinkTemplate[] =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n<think>\\n' }}"
    "{% endif %}";

}  // namespace tc::test
